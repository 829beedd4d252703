package deadline_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/deadline"
	"github.com/idgen/idgen/services/public-id/mapping/mappingtest"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/idgen/idgen/services/public-id/mapping/sqlitemap"
)

func bounded(t *testing.T, inner mapping.Store, d time.Duration) mapping.Store {
	t.Helper()
	s, err := deadline.New(inner, d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance: the contract holds through the bound.
func TestConformance(t *testing.T) {
	open := func(t *testing.T) mapping.Store {
		s, err := sqlitemap.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	mappingtest.Run(t, func(t *testing.T) mapping.Store { return bounded(t, open(t), 2*time.Second) },
		func(t *testing.T) mapping.Store {
			s := open(t)
			s.Close()
			return bounded(t, s, 2*time.Second)
		})
}

// TestFrozenRedis: every call to a frozen Redis (SIGSTOP) ends at the bound with ErrUnavailable,
// though the driver's queued command does not honour its context; the calls given up on hold
// their slots until the driver returns, and past MaxInFlight a call fails at once; once thawed,
// calls are served.
func TestFrozenRedis(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	inner, err := redismap.Open(context.Background(), redismap.Target{Addr: r.Addr}, redismap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := bounded(t, inner, 300*time.Millisecond)
	ctx := context.Background()
	pub, err := s.Publish(ctx, 683244571854022659, func() (string, error) { return "ord_frozen1234567890abcd", nil })
	if err != nil {
		t.Fatal(err)
	}
	r.Freeze(t)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = s.Resolve(ctx, pub) })
	}
	wg.Wait()
	took := time.Since(start)
	for i, err := range errs {
		if !errors.Is(err, mapping.ErrUnavailable) {
			t.Errorf("call %d to a frozen store: %v, want ErrUnavailable", i, err)
		}
	}
	if took > 2*time.Second {
		t.Errorf("8 calls to a frozen store took %v, want about the bound (300ms)", took)
	}
	// A caller's own deadline, sooner than the bound, is its own error.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.Lookup(cctx, 683244571854022659); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, mapping.ErrUnavailable) {
		t.Errorf("a caller's deadline: %v, want its context.DeadlineExceeded", err)
	}
	r.Thaw()
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		got, err := s.Resolve(ctx, pub)
		return err == nil && got == 683244571854022659, "after the thaw: " + errString(err)
	})
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// blocking is a store whose calls wait until release is closed, whatever their context.
type blocking struct {
	mapping.Store
	release chan struct{}
}

func (b blocking) Lookup(ctx context.Context, internal int64) (string, error) {
	<-b.release
	return "", mapping.ErrNotFound
}

// TestInFlightBound: calls given up on hold their slots; past MaxInFlight a call fails at once,
// and the slots come back when the driver returns.
func TestInFlightBound(t *testing.T) {
	b := blocking{release: make(chan struct{})}
	s, err := deadline.New(b, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range deadline.MaxInFlight {
		wg.Go(func() { _, _ = s.Lookup(context.Background(), 1) })
	}
	wg.Wait() // every one given up on at the bound
	start := time.Now()
	if _, err := s.Lookup(context.Background(), 1); !errors.Is(err, mapping.ErrUnavailable) || time.Since(start) > 10*time.Millisecond {
		t.Fatalf("a call with every slot held: %v after %v, want ErrUnavailable at once", err, time.Since(start))
	}
	close(b.release)
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		_, err := s.Lookup(context.Background(), 1)
		return errors.Is(err, mapping.ErrNotFound), "after the driver returned: " + errString(err)
	})
}
