package gateway_test

import (
	"testing"

	"github.com/idgen/idgen/services/public-id/internal/gateway"
)

// TestMemoryLimit: the derived limit is the body budget, two bodies a rewrite slot, the full rate
// tables, the mapping cache and 12 MiB.
func TestMemoryLimit(t *testing.T) {
	for _, tt := range []struct {
		o     gateway.Options
		cache uint64
		want  int64
	}{
		{gateway.Options{}, 0, 44<<20 + 20<<20},
		{gateway.Options{}, 32 << 20, 76<<20 + 20<<20},
		{gateway.Options{MaxBody: 64 << 10, BodyBudget: 1 << 20, MaxRewrites: 4, RateTableSize: 1024}, 0, 1<<20 + 2*4*64<<10 + 1024*320 + 12<<20},
		{gateway.Options{MemoryLimit: 100 << 20}, 32 << 20, 100 << 20},
		{gateway.Options{MemoryLimit: -5}, 0, -1},
	} {
		if got := gateway.MemoryLimit(tt.o, 1, tt.cache); got != tt.want {
			t.Errorf("MemoryLimit(%+v, 1, %d) = %d, want %d", tt.o, tt.cache, got, tt.want)
		}
	}
}
