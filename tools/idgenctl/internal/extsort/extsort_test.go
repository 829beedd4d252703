package extsort_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/idgen/idgen/tools/idgenctl/internal/extsort"
)

// sortAll adds vs to a new Sorter and returns what Merge handed back, each value repeated by its
// count, with the sorter.
func sortAll(t *testing.T, cfg extsort.Config, vs []int64) ([]int64, *extsort.Sorter) {
	t.Helper()
	ctx := context.Background()
	s, err := extsort.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, v := range vs {
		if err := s.Add(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	var out []int64
	prev, first := int64(0), true
	err = s.Merge(ctx, func(v, n int64) error {
		if !first && v <= prev {
			t.Fatalf("Merge handed %d after %d: not ascending and distinct", v, prev)
		}
		if n < 1 {
			t.Fatalf("Merge handed %d with count %d", v, n)
		}
		prev, first = v, false
		for range n {
			out = append(out, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, s
}

// ids are IDs a few generators made close in time, shuffled as an export would hold them, with
// every 97th one repeated.
func ids(n int, seed uint64) []int64 {
	r := rand.New(rand.NewPCG(seed, 1))
	base := int64(162898200000) << 22
	var vs []int64
	for i := range n {
		v := base + int64(i)<<12 | r.Int64N(1<<12)
		vs = append(vs, v)
		if i%97 == 0 {
			vs = append(vs, v)
		}
	}
	r.Shuffle(len(vs), func(i, j int) { vs[i], vs[j] = vs[j], vs[i] })
	return vs
}

func TestSortedWithDuplicatesAdjacent(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	random := make([]int64, 20_000)
	for i := range random {
		random[i] = r.Int64() - math.MaxInt64/2 // negative ones too
	}
	few := make([]int64, 10_000)
	for i := range few {
		few[i] = r.Int64N(10) // long runs of equal values
	}
	for _, tt := range []struct {
		name string
		cfg  extsort.Config
		in   []int64
		runs int // runs written: the input's, and one for each FanIn runs merged while more than FanIn remain
	}{
		{"one run in memory", extsort.Config{}, ids(5000, 1), 1},
		{"many runs, one merge", extsort.Config{RunLen: 1024}, ids(20_000, 2), 20},
		{"more runs than the fan-in", extsort.Config{RunLen: 1024, FanIn: 4}, ids(20_000, 3), 20 + 6},
		{"fan-in 2, many levels", extsort.Config{RunLen: 1024, FanIn: 2}, random, 20 + 18},
		{"extremes", extsort.Config{RunLen: 1024}, []int64{math.MaxInt64, math.MinInt64, 0, -1, math.MaxInt64, math.MinInt64}, 1},
		{"few distinct values", extsort.Config{RunLen: 1024, FanIn: 3}, few, 10 + 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Dir = t.TempDir()
			got, s := sortAll(t, tt.cfg, tt.in)
			want := slices.Sorted(slices.Values(tt.in))
			if !slices.Equal(got, want) {
				t.Fatalf("got %d values, want %d, sorted as slices.Sort sorts them", len(got), len(want))
			}
			if s.Added() != int64(len(tt.in)) || s.Runs() != tt.runs {
				t.Fatalf("added %d, runs %d; want %d and %d", s.Added(), s.Runs(), len(tt.in), tt.runs)
			}
			if s.DiskPeak() <= 0 || s.DiskPeak() > int64(len(tt.in))*2*binaryMax {
				t.Fatalf("disk peak %d bytes for %d values", s.DiskPeak(), len(tt.in))
			}
			s.Close()
			if ents, _ := os.ReadDir(tt.cfg.Dir); len(ents) != 0 {
				t.Fatalf("Close left %v", ents)
			}
		})
	}
}

const binaryMax = 10 // bytes of the longest varint

// TestDeltaVarints: IDs close in time take far less disk than 8 bytes each.
func TestDeltaVarints(t *testing.T) {
	in := ids(100_000, 4)
	_, s := sortAll(t, extsort.Config{Dir: t.TempDir(), RunLen: 16 << 10}, in)
	if per := float64(s.DiskPeak()) / float64(len(in)); per > 3 {
		t.Fatalf("%.2f bytes a value on disk, want at most 3", per)
	}
}

func TestEmpty(t *testing.T) {
	got, s := sortAll(t, extsort.Config{Dir: t.TempDir()}, nil)
	if len(got) != 0 || s.Runs() != 0 || s.DiskPeak() != 0 {
		t.Fatalf("empty input: %v, %d runs, %d bytes", got, s.Runs(), s.DiskPeak())
	}
}

// TestMemoryBound sorts 2 Mi values (16 MiB as an array) with runs of 32 Ki (256 KiB): the heap
// never grows by more than half what the values take, at any Add or any value the merge hands
// back.
func TestMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("sorts 2 Mi values")
	}
	ctx := context.Background()
	s, err := extsort.New(extsort.Config{Dir: t.TempDir(), RunLen: 32 << 10, FanIn: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, uint64(0)
	sample := func() {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc-min(ms.HeapAlloc, base))
	}
	const n = 2 << 20
	r := rand.New(rand.NewPCG(5, 5))
	for i := range n {
		if err := s.Add(ctx, r.Int64N(n)); err != nil {
			t.Fatal(err)
		}
		if i%(128<<10) == 0 {
			sample()
		}
	}
	var total, i int64
	err = s.Merge(ctx, func(_, c int64) error {
		if total += c; i%(128<<10) == 0 {
			sample()
		}
		i++
		return nil
	})
	if err != nil || total != n {
		t.Fatalf("merged %d of %d: %v", total, n, err)
	}
	t.Logf("%d values, %d runs: heap grew by at most %.1f MiB, disk peak %.1f MiB", n, s.Runs(), float64(peak)/(1<<20), float64(s.DiskPeak())/(1<<20))
	// Held in memory the values would take 16 MiB; the sorter holds one run (256 KiB), 16 read
	// buffers (1 MiB) and a write buffer (1 MiB), and the garbage between two collections.
	if peak > 8<<20 {
		t.Fatalf("heap grew by %.1f MiB sorting %d values: the memory bound does not hold", float64(peak)/(1<<20), n)
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []extsort.Config{{RunLen: 10}, {FanIn: 1}, {RunLen: -1}} {
		if _, err := extsort.New(cfg); !errors.Is(err, extsort.ErrBadConfig) {
			t.Errorf("New(%+v): %v, want ErrBadConfig", cfg, err)
		}
	}
	if _, err := extsort.New(extsort.Config{Dir: "/nonexistent/folder"}); err == nil {
		t.Error("New in a missing folder: no error")
	}

	// fn's error stops the merge and is returned.
	s, err := extsort.New(extsort.Config{Dir: t.TempDir(), RunLen: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, v := range ids(5000, 6) {
		_ = s.Add(ctx, v)
	}
	stop := errors.New("stop")
	calls := 0
	if err := s.Merge(ctx, func(int64, int64) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("Merge: %v after %d calls, want stop after 1", err, calls)
	}
	if err := s.Merge(ctx, func(int64, int64) error { return nil }); err == nil {
		t.Fatal("a second Merge: no error")
	}
	if err := s.Add(ctx, 1); err == nil {
		t.Fatal("Add after Merge: no error")
	}

	// A canceled context stops the sort at the next run written.
	s2, err := extsort.New(extsort.Config{Dir: t.TempDir(), RunLen: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	var aerr error
	for i := 0; i < 2048 && aerr == nil; i++ {
		aerr = s2.Add(cctx, int64(i))
	}
	if !errors.Is(aerr, context.Canceled) {
		t.Fatalf("Add with a canceled context: %v", aerr)
	}
}
