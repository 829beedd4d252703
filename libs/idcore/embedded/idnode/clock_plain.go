//go:build !chaos

package main

import (
	"context"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/clocktest"
)

// clockFlags registers no clock option without the chaos tag: the system clock, reported
// synchronized (a development machine's clock is often not).
func clockFlags() func(context.Context) (idcore.Clock, idcore.HealthSource) {
	return func(context.Context) (idcore.Clock, idcore.HealthSource) { return nil, clocktest.Synced() }
}
