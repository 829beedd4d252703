package testenv

import (
	"bytes"
	"sync"
)

// LogBuffer is a log's output that a test reads while the code under test writes to it from its
// own goroutines: a bytes.Buffer behind a mutex. The zero value is ready to use.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what has been written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
