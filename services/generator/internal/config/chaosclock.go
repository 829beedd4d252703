//go:build chaos

package config

import (
	"context"
	"flag"

	"github.com/idgen/idgen/libs/idcore/chaosclock"
)

// This file is compiled only with the chaos tag (make chaos builds the generator with
// go build -tags chaos). It adds --chaos-clock-file: the chaos runner moves this process's wall
// clock by an offset, and sets the estimated error its clock discipline reports, by rewriting
// that file (libs/idcore/chaosclock) while the process runs. A production build has neither the
// flag nor this clock.

func init() {
	testFlags = func(fs *flag.FlagSet, c *Config) {
		fs.Func("chaos-clock-file", "chaos builds only: a file holding this process's clock offset and estimated error, read every 10 ms", func(path string) error {
			clock := chaosclock.Start(context.Background(), path)
			c.Clock, c.ClockHealth = clock, clock
			return nil
		})
	}
}
