package idclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeGen is an IdService handing out IDs of one region from a counter; it can be made to
// answer unavailable, as a generator without a lease does.
type fakeGen struct {
	idgenv1connect.UnimplementedIdServiceHandler
	region  int
	next    atomic.Int64
	down    atomic.Bool
	batches atomic.Int64
	health  *grpchealth.StaticChecker
	stalled atomic.Pointer[chan struct{}] // set: GenerateBatch hangs until it is closed
}

func (f *fakeGen) GenerateBatch(ctx context.Context, req *connect.Request[idgenv1.GenerateBatchRequest]) (*connect.Response[idgenv1.GenerateBatchResponse], error) {
	if ch := f.stalled.Load(); ch != nil {
		select {
		case <-*ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.down.Load() {
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("no_lease"))
	}
	f.batches.Add(1)
	s := idcore.ScheduleV2()
	out := make([]int64, req.Msg.GetCount())
	for i := range out {
		n := f.next.Add(1)
		id, _ := s.Compose(idcore.Parts{Timestamp: 1000 + n/1024, Region: f.region, Machine: 1, Sequence: int(n % 1024)})
		out[i] = int64(id)
	}
	return connect.NewResponse(&idgenv1.GenerateBatchResponse{Ids: out}), nil
}

func (f *fakeGen) setDown(down bool) {
	f.down.Store(down)
	st := grpchealth.StatusServing
	if down {
		st = grpchealth.StatusNotServing
	}
	f.health.SetStatus(idgenv1connect.IdServiceName, st)
}

func serve(t *testing.T, region int) (*fakeGen, string) {
	f := &fakeGen{region: region, health: grpchealth.NewStaticChecker(idgenv1connect.IdServiceName)}
	mux := http.NewServeMux()
	mux.Handle(idgenv1connect.NewIdServiceHandler(f))
	mux.Handle(grpchealth.NewHandler(f.health))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func TestBufferAndFailover(t *testing.T) {
	local, localURL := serve(t, 0)
	peer, peerURL := serve(t, 2)
	c, err := idclient.New(idclient.Config{Endpoints: []string{localURL, peerURL}, Batch: 100, LowWater: 50,
		ProbeEvery: 50 * time.Millisecond, HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c.Collectors()...)
	ctx := context.Background()
	seen := map[idcore.ID]bool{}
	take := func(n int) map[int]int {
		regions := map[int]int{}
		for range n {
			id, err := c.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if seen[id] {
				t.Fatalf("id %d twice", id)
			}
			seen[id] = true
			d, _ := c.Decode(id)
			regions[d.Region]++
		}
		return regions
	}
	if r := take(500); r[0] != 500 {
		t.Fatalf("from the local endpoint: %v", r)
	}
	// 500 IDs in batches of 100: the buffer refilled ahead of use, a handful of calls, not 500.
	if b := local.batches.Load(); b < 5 || b > 8 {
		t.Fatalf("%d batches for 500 ids", b)
	}
	local.setDown(true)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		return c.Active() == peerURL, "still on " + c.Active() + " with the local endpoint down"
	})
	r := take(1000)
	if r[2] < 800 {
		t.Fatalf("with the local endpoint down the ids came from %v", r)
	}
	if c.Active() != peerURL {
		t.Fatalf("active %s, want the peer", c.Active())
	}
	local.setDown(false)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		return c.Active() == localURL, "did not move back to the local endpoint: still on " + c.Active()
	})
	_ = take(300)
	if got := testutil.ToFloat64(c.Collectors()[0]); got < 2 {
		t.Fatalf("failovers counted %v, want at least 2 (away and back)", got)
	}
	if peer.batches.Load() == 0 {
		t.Fatal("the peer was never asked")
	}
}

func TestNextWaitsAndGivesUpWithContext(t *testing.T) {
	f, url := serve(t, 0)
	f.setDown(true)
	c, err := idclient.New(idclient.Config{Endpoints: []string{url}, Batch: 10, HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := c.Next(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no_lease") {
		t.Fatalf("Next with every endpoint down: %v", err)
	}
	f.setDown(false)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel2()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := c.Next(ctx2); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	c.Close()
	if _, err := c.Next(context.Background()); !errors.Is(err, idclient.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// stall makes f's GenerateBatch hang, as a frozen process does, until release is closed or the
// call's context ends.
func (f *fakeGen) stall() (release func()) {
	ch := make(chan struct{})
	f.stalled.Store(&ch)
	return sync.OnceFunc(func() { f.stalled.Store(nil); close(ch) })
}

// TestHedge: with the local endpoint hanging and the buffer empty, Next is answered from the
// peer within the hedge delay, not the call timeout; the local endpoint stays active until its
// call times out, then the client moves as before. A late batch from the hung call goes into the
// buffer too, and no ID is handed out twice.
func TestHedge(t *testing.T) {
	local, localURL := serve(t, 0)
	peer, peerURL := serve(t, 2)
	const hedgeAfter, callTimeout = 50 * time.Millisecond, 1500 * time.Millisecond
	c, err := idclient.New(idclient.Config{Endpoints: []string{localURL, peerURL}, Batch: 10, LowWater: 5,
		ProbeEvery: time.Hour, CallTimeout: callTimeout, HedgeAfter: hedgeAfter, HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hedges := c.Collectors()[4]
	ctx := context.Background()
	seen := map[idcore.ID]bool{}
	next := func() (idcore.ID, time.Duration) {
		t.Helper()
		began := time.Now()
		id, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("id %d twice", id)
		}
		seen[id] = true
		return id, time.Since(began)
	}
	region := func(id idcore.ID) int { d, _ := c.Decode(id); return d.Region }
	for range 20 {
		next()
	}
	if got := testutil.ToFloat64(hedges); got != 0 {
		t.Fatalf("%v hedged calls with the local endpoint answering", got)
	}
	release := local.stall()
	defer release()
	hung := time.Now()
	// Take the buffer dry: the next Next waits, and is answered by the peer.
	var longest time.Duration
	fromPeer := 0
	for time.Since(hung) < callTimeout/2 {
		id, took := next()
		longest = max(longest, took)
		if region(id) == 2 {
			fromPeer++
		}
	}
	if fromPeer == 0 || longest > hedgeAfter+200*time.Millisecond {
		t.Fatalf("with the local endpoint hung: %d IDs from the peer, the longest Next %v (hedge delay %v, call timeout %v)", fromPeer, longest, hedgeAfter, callTimeout)
	}
	if got := testutil.ToFloat64(hedges); got < 1 {
		t.Fatalf("%v hedged calls counted", got)
	}
	if c.Active() != localURL {
		t.Fatalf("moved to %s before the hung call timed out", c.Active())
	}
	// The hung call answers late: its batch is buffered, not lost and not repeated.
	release()
	fetchedLocal := local.batches.Load()
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return local.batches.Load() > fetchedLocal, "the released call did not answer"
	})
	for range 200 {
		next()
	}
	// Every batch served went into the buffer, the late one included.
	fetched := c.Collectors()[1]
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		served := 10 * (local.batches.Load() + peer.batches.Load())
		return testutil.ToFloat64(fetched) == float64(served), fmt.Sprintf("%v IDs fetched into the buffer, %d served", testutil.ToFloat64(fetched), served)
	})
	t.Logf("longest Next with the local endpoint hung: %v; %d IDs from the peer; %v hedged calls", longest, fromPeer, testutil.ToFloat64(hedges))

	// Hung past the call timeout: the client moves to the peer, and Next never waited long.
	release = local.stall()
	defer release()
	longest = 0
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		_, took := next()
		longest = max(longest, took)
		return c.Active() == peerURL, "did not move to the peer after the call timeout: on " + c.Active()
	})
	if longest > hedgeAfter+200*time.Millisecond {
		t.Fatalf("the longest Next %v until the move", longest)
	}
}

// TestHedgeOff: a negative HedgeAfter waits for the call timeout before moving, as without
// hedging, and asks the peer nothing meanwhile.
func TestHedgeOff(t *testing.T) {
	local, localURL := serve(t, 0)
	peer, peerURL := serve(t, 2)
	const callTimeout = 400 * time.Millisecond
	c, err := idclient.New(idclient.Config{Endpoints: []string{localURL, peerURL}, Batch: 10, LowWater: 5,
		ProbeEvery: time.Hour, CallTimeout: callTimeout, HedgeAfter: -1, HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for range 20 {
		if _, err := c.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	defer local.stall()()
	var longest time.Duration
	for range 30 {
		began := time.Now()
		if _, err := c.Next(ctx); err != nil {
			t.Fatal(err)
		}
		longest = max(longest, time.Since(began))
	}
	if longest < callTimeout-50*time.Millisecond || c.Active() != peerURL || peer.batches.Load() == 0 {
		t.Fatalf("without hedging: the longest Next %v (call timeout %v), active %s, %d batches from the peer", longest, callTimeout, c.Active(), peer.batches.Load())
	}
	if got := testutil.ToFloat64(c.Collectors()[4]); got != 0 {
		t.Fatalf("%v hedged calls with hedging off", got)
	}
}
