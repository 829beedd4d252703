package extsort_test

import (
	"context"
	"slices"
	"testing"

	"github.com/idgen/idgen/tools/idgenctl/internal/extsort"
)

// BenchmarkSort sorts and counts the same 1 Mi shuffled IDs three ways: slices.Sort of them all
// in memory with a pass counting equal neighbours (the baseline: what the sort costs without a
// memory bound), and the Sorter with runs of 1 Mi (one run, written and read back) and of 64 Ki
// (16 runs merged). Compare ns/op within one run of the benchmark.
func BenchmarkSort(b *testing.B) {
	in := ids(1<<20-1<<20/98, 9) // 1 Mi values with the repeats
	b.Run("slices.Sort", func(b *testing.B) {
		buf := make([]int64, len(in))
		b.SetBytes(8 * int64(len(in)))
		for b.Loop() {
			copy(buf, in)
			slices.Sort(buf)
			dups := 0
			for i := 1; i < len(buf); i++ {
				if buf[i] == buf[i-1] {
					dups++
				}
			}
			if dups == 0 {
				b.Fatal("no duplicates counted")
			}
		}
	})
	for _, tt := range []struct {
		name   string
		runLen int
	}{{"extsort/one-run", 1 << 20}, {"extsort/16-runs", 64 << 10}} {
		b.Run(tt.name, func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			b.SetBytes(8 * int64(len(in)))
			for b.Loop() {
				s, err := extsort.New(extsort.Config{Dir: dir, RunLen: tt.runLen})
				if err != nil {
					b.Fatal(err)
				}
				for _, v := range in {
					if err := s.Add(ctx, v); err != nil {
						b.Fatal(err)
					}
				}
				dups := 0
				if err := s.Merge(ctx, func(_, n int64) error {
					if n > 1 {
						dups++
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				s.Close()
				if dups == 0 {
					b.Fatal("no duplicates counted")
				}
			}
		})
	}
}
