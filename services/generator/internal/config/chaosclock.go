//go:build chaos

package config

import (
	"context"
	"flag"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

// This file is compiled only with the chaos tag (make chaos builds the generator with
// go build -tags chaos). It adds --chaos-clock-file: the chaos runner moves this process's wall
// clock by an offset, and sets the estimated error its clock discipline reports, by rewriting
// that file ("OFFSET ESTERROR", two Go durations, e.g. "-1.5s 1.5s") while the process runs.
// A production build has neither the flag nor this clock.

func init() {
	testFlags = func(fs *flag.FlagSet, c *Config) {
		fs.Func("chaos-clock-file", "chaos builds only: a file holding this process's clock offset and estimated error, read every 10 ms", func(path string) error {
			clock := startFileClock(context.Background(), path)
			c.Clock, c.ClockHealth = clock, clock
			return nil
		})
	}
}

// fileClock is the system clock plus the file's offset, and a health source reporting a
// synchronized clock with the file's estimated error.
type fileClock struct {
	idcore.Clock
	path        string
	off, esterr atomic.Int64
}

func startFileClock(ctx context.Context, path string) *fileClock {
	c := &fileClock{Clock: idcore.SystemClock(), path: path}
	c.read()
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
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

func (c *fileClock) read() {
	b, err := os.ReadFile(c.path)
	if err != nil {
		c.off.Store(0)
		c.esterr.Store(0)
		return
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return // caught half-written: keep the last values
	}
	off, err1 := time.ParseDuration(f[0])
	est, err2 := time.ParseDuration(f[1])
	if err1 != nil || err2 != nil {
		return
	}
	c.off.Store(int64(off))
	c.esterr.Store(int64(est))
}

func (c *fileClock) Now() time.Time { return c.Clock.Now().Add(time.Duration(c.off.Load())) }

func (c *fileClock) ReadClock() (idcore.KernelClock, error) {
	e := time.Duration(c.esterr.Load())
	return idcore.KernelClock{Synchronized: true, EstimatedError: e, MaxError: e}, nil
}
