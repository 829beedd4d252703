package idcore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	f := newGen(t, nil)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(f.g.Collector())
	ctx := context.Background()
	if _, err := f.g.NextBatch(ctx, 1500); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(-time.Second)
	if _, err := f.g.Next(ctx); !errors.Is(err, idcore.ErrClockBackwards) {
		t.Fatal(err)
	}
	want := `
# HELP idgen_generator_ids_issued_total IDs issued by this generator.
# TYPE idgen_generator_ids_issued_total counter
idgen_generator_ids_issued_total 1500
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "idgen_generator_ids_issued_total"); err != nil {
		t.Fatal(err)
	}
	if got := testenv.GatheredMetric(t, reg, "idgen_generator_refusals_total", testenv.Labels{"reason": "clock_backwards"}); got != 1 {
		t.Fatalf("clock_backwards refusals = %v", got)
	}
	if got := testenv.GatheredMetric(t, reg, "idgen_generator_machine_number", testenv.Labels{"layout": "v2"}); got != 5 {
		t.Fatalf("machine number gauge = %v", got)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}
