//go:build chaos

package main

import (
	"context"
	"flag"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/chaosclock"
	"github.com/idgen/idgen/libs/idcore/clocktest"
)

// clockFlags registers --chaos-clock-file: the runner moves this process's clock, and the error
// its clock discipline reports, through that file.
func clockFlags() func(context.Context) (idcore.Clock, idcore.HealthSource) {
	path := flag.String("chaos-clock-file", "", "chaos builds only: a file holding this process's clock offset and estimated error")
	return func(ctx context.Context) (idcore.Clock, idcore.HealthSource) {
		if *path == "" {
			return nil, clocktest.Synced()
		}
		c := chaosclock.Start(ctx, *path)
		return c, c
	}
}
