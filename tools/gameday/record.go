package gameday

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

type seriesKind int

const (
	kindCaller seriesKind = iota
	kindNode
)

// run is IDs First … First+N-1, received together at At; Wait is the longest a call to Next waited
// for the line they came in (callers only).
type run struct {
	At     time.Time
	Wait   time.Duration
	Active int // callers: the highest endpoint index the client was on (0: its own region, 1: its peer)
	First  int64
	N      int
}

// callerError is a call to Next that failed.
type callerError struct {
	At  time.Time
	Msg string
}

// series is what one caller or embedded node received.
type series struct {
	name, region string
	kind         seriesKind

	mu     sync.Mutex
	runs   []run
	errors []callerError
}

func (s *series) add(at time.Time, wait time.Duration, active int, first int64, n int) {
	s.mu.Lock()
	s.runs = append(s.runs, run{At: at, Wait: wait, Active: active, First: first, N: n})
	s.mu.Unlock()
}

func (s *series) fail(at time.Time, msg string) {
	s.mu.Lock()
	s.errors = append(s.errors, callerError{at, msg})
	s.mu.Unlock()
}

func (s *series) snapshot() ([]run, []callerError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]run(nil), s.runs...), append([]callerError(nil), s.errors...)
}

// recorder holds every series of the run.
type recorder struct {
	mu  sync.Mutex
	all []*series
}

func (r *recorder) series(name, region string, kind seriesKind) *series {
	s := &series{name: name, region: region, kind: kind}
	r.mu.Lock()
	r.all = append(r.all, s)
	r.mu.Unlock()
	return s
}

// scanCaller reads a caller's output (cmd/caller): "ids UNIX_US WAIT_US ACTIVE LO+N …" and
// "error UNIX_US MESSAGE"; other lines (its log) are skipped. first is called at the first IDs.
func scanCaller(r io.Reader, s *series, first func()) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "ids":
			f := strings.Fields(rest)
			if len(f) < 3 {
				continue
			}
			us, err1 := strconv.ParseInt(f[0], 10, 64)
			wait, err2 := strconv.ParseInt(f[1], 10, 64)
			active, err3 := strconv.Atoi(f[2])
			if err1 != nil || err2 != nil || err3 != nil {
				continue
			}
			at, w := time.UnixMicro(us), time.Duration(wait)*time.Microsecond
			for _, x := range f[3:] {
				lo, n, ok := strings.Cut(x, "+")
				a, err1 := strconv.ParseInt(lo, 10, 64)
				b, err2 := strconv.Atoi(n)
				if !ok || err1 != nil || err2 != nil || b < 1 {
					continue
				}
				s.add(at, w, active, a, b)
				first()
			}
			if len(f) == 3 { // no ID in the line: still a wait to count
				s.add(at, w, active, 0, 0)
			}
		case "error":
			us, msg, _ := strings.Cut(rest, " ")
			v, err := strconv.ParseInt(us, 10, 64)
			if err == nil {
				s.fail(time.UnixMicro(v), msg)
			}
		}
	}
}
