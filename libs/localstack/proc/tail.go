package proc

import (
	"bytes"
	"io"
	"os"
	"sync"
)

// tailBuffer keeps the last max bytes written to it (up to twice that between trims).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.b)
}

// tailFile returns the last n lines of the file at path, reading at most its last 1 MiB.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && n > 0 && st.Size() > 1<<20 {
		_, _ = f.Seek(-1<<20, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return lastLines(b, n)
}

// lastLines returns the last n lines of b (all of b when n <= 0); a last line without its newline
// counts as a line.
func lastLines(b []byte, n int) string {
	if n <= 0 {
		return string(b)
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	start := end
	for range n {
		j := bytes.LastIndexByte(b[:start], '\n')
		if j < 0 {
			return string(b)
		}
		start = j
	}
	return string(b[start+1:])
}
