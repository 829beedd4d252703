package idclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// slowGen is a fakeGen whose batches take delay to answer, counting the calls it is answering at
// once.
type slowGen struct {
	*fakeGen
	delay      time.Duration
	now, most  atomic.Int64
	heldAnswer atomic.Bool // set: GenerateBatch waits until it is cleared
}

func (s *slowGen) GenerateBatch(ctx context.Context, req *connect.Request[idgenv1.GenerateBatchRequest]) (*connect.Response[idgenv1.GenerateBatchResponse], error) {
	n := s.now.Add(1)
	defer s.now.Add(-1)
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for s.heldAnswer.Load() && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if err := ctx.Err(); err != nil {
		return nil, err // the client gave up: nothing served
	}
	return s.fakeGen.GenerateBatch(ctx, req)
}

func serveSlow(t *testing.T, region int, delay time.Duration) (*slowGen, string) {
	t.Helper()
	s := &slowGen{fakeGen: &fakeGen{region: region, health: grpchealth.NewStaticChecker(idgenv1connect.IdServiceName)}, delay: delay}
	mux := http.NewServeMux()
	mux.Handle(idgenv1connect.NewIdServiceHandler(s))
	mux.Handle(grpchealth.NewHandler(s.health))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// bufferLevel is the client's idgen_client_buffer_ids.
func bufferLevel(c *idclient.Client) float64 { return testutil.ToFloat64(c.Collectors()[2]) }

// TestRefillAhead: with LowWater four batches, refills start before the buffer is empty, several
// are in flight at once (never more than four), and with nobody taking IDs the buffer stops below
// LowWater + 4 batches.
func TestRefillAhead(t *testing.T) {
	const batch, lowWater = 100, 400
	gen, url := serveSlow(t, 0, 20*time.Millisecond)
	c, err := idclient.New(idclient.Config{Endpoints: []string{url}, Batch: batch, LowWater: lowWater, HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	if _, err := c.Next(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return bufferLevel(c) >= lowWater-1, fmt.Sprintf("the buffer holds %v IDs, want %d or more", bufferLevel(c), lowWater-1)
	})
	if most := gen.most.Load(); most < 2 || most > lowWater/batch {
		t.Fatalf("at most %d refills in flight at once, want several and no more than %d (LowWater %d, Batch %d)", most, lowWater/batch, lowWater, batch)
	}
	time.Sleep(100 * time.Millisecond) // five answers' time: nothing more is asked for
	if got := bufferLevel(c); got >= 2*lowWater {
		t.Fatalf("the buffer holds %v IDs with nobody taking them, want fewer than %d", got, 2*lowWater)
	}
	// Take it down past the mark, not to empty: refills start while IDs are still buffered.
	before := gen.batches.Load()
	for range int(bufferLevel(c)) - lowWater + 2*batch {
		if _, err := c.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if left := bufferLevel(c); left == 0 {
		t.Fatalf("the buffer ran out")
	}
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return gen.batches.Load() >= before+2, fmt.Sprintf("%d batches asked for after taking the buffer %d IDs below the mark, want 2", gen.batches.Load()-before, 2*batch)
	})
}

// TestNoIDTwice: many goroutines take IDs while batches come from two endpoints with several in
// flight, the local one goes down and back (failover and return) and hangs (hedges): no ID is
// handed out twice, and every ID fetched is either handed out or still in the buffer.
func TestNoIDTwice(t *testing.T) {
	local, localURL := serveSlow(t, 0, 2*time.Millisecond)
	peer, peerURL := serveSlow(t, 2, 2*time.Millisecond)
	c, err := idclient.New(idclient.Config{Endpoints: []string{localURL, peerURL}, Batch: 50, LowWater: 200,
		ProbeEvery: 20 * time.Millisecond, CallTimeout: 3 * time.Second, HedgeAfter: 20 * time.Millisecond,
		HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	seen := map[idcore.ID]bool{}
	var handed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			var mine []idcore.ID
			for {
				id, err := c.Next(ctx)
				if err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					break
				}
				mine = append(mine, id)
			}
			mu.Lock()
			defer mu.Unlock()
			handed.Add(int64(len(mine)))
			for _, id := range mine {
				if seen[id] {
					t.Errorf("id %d handed out twice", id)
				}
				seen[id] = true
			}
		})
	}
	step := func(d time.Duration) { time.Sleep(d) }
	step(200 * time.Millisecond)
	local.setDown(true) // 503 and not serving: the client moves to its peer
	testenv.Eventually(t, 5*time.Second, func() (bool, string) { return c.Active() == peerURL, "did not move to the peer" })
	step(200 * time.Millisecond)
	local.setDown(false)
	testenv.Eventually(t, 5*time.Second, func() (bool, string) { return c.Active() == localURL, "did not move back" })
	step(100 * time.Millisecond)
	local.heldAnswer.Store(true) // hung: the empty buffer hedges to the peer
	step(200 * time.Millisecond)
	local.heldAnswer.Store(false)
	step(200 * time.Millisecond)
	cancel()
	wg.Wait()
	if hedges := testutil.ToFloat64(c.Collectors()[4]); hedges == 0 {
		t.Error("no hedged call while the local endpoint hung")
	}
	if local.most.Load() < 2 && peer.most.Load() < 2 {
		t.Error("never more than one refill in flight")
	}
	fetched := c.Collectors()[1]
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		served := 50 * (local.batches.Load() + peer.batches.Load())
		f := int64(testutil.ToFloat64(fetched))
		return f == served && f == handed.Load()+int64(bufferLevel(c)),
			fmt.Sprintf("%d IDs served, %d fetched, %d handed out, %v buffered", served, f, handed.Load(), bufferLevel(c))
	})
	t.Logf("%d IDs handed out, %v hedged calls, at most %d and %d calls in flight", handed.Load(), testutil.ToFloat64(c.Collectors()[4]), local.most.Load(), peer.most.Load())
}

// TestClose: a Next waiting for IDs returns ErrClosed at Close, and so does every Next after,
// though the buffer held IDs, which Close dropped.
func TestClose(t *testing.T) {
	f, url := serve(t, 0)
	c, err := idclient.New(idclient.Config{Endpoints: []string{url}, Batch: 10, LowWater: 30, HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(t.Context()); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, func() (bool, string) { return bufferLevel(c) >= 29, "not refilled" })
	c.Close()
	c.Close()
	if _, err := c.Next(t.Context()); !errors.Is(err, idclient.ErrClosed) {
		t.Fatalf("Next after Close with IDs buffered: %v", err)
	}
	if got := bufferLevel(c); got != 0 {
		t.Fatalf("%v IDs still buffered after Close", got)
	}

	release := f.stall()
	defer release()
	c2, err := idclient.New(idclient.Config{Endpoints: []string{url}, Batch: 10, HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := c2.Next(context.Background())
		got <- err
	}()
	time.Sleep(50 * time.Millisecond) // Next waits on the stalled refill
	c2.Close()
	select {
	case err := <-got:
		if !errors.Is(err, idclient.ErrClosed) {
			t.Fatalf("a Next waiting at Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a Next waiting at Close did not return")
	}
}

// TestBatchOfOne: with Batch 1 the default low-water mark still refills (Batch/2 was 0, and no
// refill ever started).
func TestBatchOfOne(t *testing.T) {
	_, url := serve(t, 0)
	c, err := idclient.New(idclient.Config{Endpoints: []string{url}, Batch: 1, HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for range 5 {
		if _, err := c.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
