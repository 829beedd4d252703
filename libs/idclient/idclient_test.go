package idclient_test

import (
	"context"
	"errors"
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
}

func (f *fakeGen) GenerateBatch(_ context.Context, req *connect.Request[idgenv1.GenerateBatchRequest]) (*connect.Response[idgenv1.GenerateBatchResponse], error) {
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
