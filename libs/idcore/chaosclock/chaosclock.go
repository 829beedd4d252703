// Package chaosclock is the clock the chaos runner moves at run time: the system clock plus an
// offset, and a clock-health source reporting an estimated error, both read from a file the
// runner rewrites ("OFFSET ESTERROR", two Go durations, e.g. "-1.5s 1.5s"). Only binaries built
// with the chaos tag use it (the generator and the chaos runner's embedded node): a production
// build never links it.
package chaosclock

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

// Poll is how often the file is read again.
const Poll = 10 * time.Millisecond

// Clock is the system clock moved by the file's offset; it is also the health source reporting
// the file's estimated error, as a clock discipline that has noticed the offset would.
type Clock struct {
	idcore.Clock
	path   string
	off    atomic.Int64
	esterr atomic.Int64
}

var (
	_ idcore.Clock        = (*Clock)(nil)
	_ idcore.HealthSource = (*Clock)(nil)
)

// Start reads path now and then every Poll until ctx ends. A missing or unreadable file means
// no offset and no error.
func Start(ctx context.Context, path string) *Clock {
	c := &Clock{Clock: idcore.SystemClock(), path: path}
	c.read()
	go func() {
		t := time.NewTicker(Poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				c.read()
			}
		}
	}()
	return c
}

func (c *Clock) read() {
	b, err := os.ReadFile(c.path)
	if err != nil {
		c.off.Store(0)
		c.esterr.Store(0)
		return
	}
	off, est, ok := Parse(string(b))
	if !ok {
		return // a file caught half-written keeps the last values
	}
	c.off.Store(int64(off))
	c.esterr.Store(int64(est))
}

// Parse reads "OFFSET ESTERROR".
func Parse(s string) (offset, esterr time.Duration, ok bool) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, 0, false
	}
	off, err1 := time.ParseDuration(f[0])
	est, err2 := time.ParseDuration(f[1])
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return off, est, true
}

// Now is the system clock plus the offset.
func (c *Clock) Now() time.Time { return c.Clock.Now().Add(time.Duration(c.off.Load())) }

// ReadClock reports a synchronized clock with the file's estimated error.
func (c *Clock) ReadClock() (idcore.KernelClock, error) {
	e := time.Duration(c.esterr.Load())
	return idcore.KernelClock{Synchronized: true, EstimatedError: e, MaxError: e}, nil
}
