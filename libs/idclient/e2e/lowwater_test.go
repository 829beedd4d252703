package idclient_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// laggingGen issues IDs stamped lag ago, as a batch looks on arrival when the client's process
// took that long to read it; it counts the calls it is answering at once.
type laggingGen struct {
	idgenv1connect.UnimplementedIdServiceHandler
	lag       time.Duration
	seq       atomic.Int64
	now, most atomic.Int64
}

func (g *laggingGen) GenerateBatch(ctx context.Context, req *connect.Request[idgenv1.GenerateBatchRequest]) (*connect.Response[idgenv1.GenerateBatchResponse], error) {
	n := g.now.Add(1)
	defer g.now.Add(-1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
	time.Sleep(time.Millisecond)
	ts := time.Now().Add(-g.lag).Sub(idcore.Epoch).Milliseconds()
	out := make([]int64, req.Msg.GetCount())
	for i := range out {
		s := g.seq.Add(1)
		id, err := idcore.ScheduleV2().Compose(idcore.Parts{Timestamp: ts, Machine: 1, Sequence: int(s % 1024)})
		if err != nil {
			return nil, err
		}
		out[i] = int64(id)
	}
	return connect.NewResponse(&idgenv1.GenerateBatchResponse{Ids: out}), nil
}

// lowWater is the client's idgen_client_low_water_ids.
func lowWater(c *idclient.Client) int { return int(testutil.ToFloat64(c.Collectors()[5])) }

// TestLowWaterAdapts: batches that arrive late (stamped 40 ms before they reach the buffer) raise
// the low-water mark once IDs are taken, never above MaxLowWater, and never run more refills at
// once than there are batches in it; with nothing taken the mark is LowWater. Batches whose IDs
// are older than CallTimeout (here every other test's) leave it at LowWater.
func TestLowWaterAdapts(t *testing.T) {
	if _, err := idclient.New(idclient.Config{Endpoints: []string{"http://127.0.0.1:1"}, LowWater: 500, MaxLowWater: 400}); err == nil {
		t.Fatal("MaxLowWater below LowWater accepted")
	}
	// MaxLowWater set alone bounds the default LowWater (Batch/2 = 500) too.
	if c, err := idclient.New(idclient.Config{Endpoints: []string{"http://127.0.0.1:1"}, MaxLowWater: 100}); err != nil {
		t.Fatalf("MaxLowWater 100 with the default LowWater: %v", err)
	} else {
		c.Close()
	}
	const batch, low, most = 100, 200, 1000
	gen := &laggingGen{lag: 40 * time.Millisecond}
	mux := http.NewServeMux()
	mux.Handle(idgenv1connect.NewIdServiceHandler(gen))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := idclient.New(idclient.Config{Endpoints: []string{srv.URL}, Batch: batch, LowWater: low, MaxLowWater: most,
		HedgeAfter: -1, HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return bufferLevel(c) >= low, fmt.Sprintf("the buffer holds %v IDs, want %d or more", bufferLevel(c), low)
	})
	time.Sleep(50 * time.Millisecond)
	if got := lowWater(c); got != low {
		t.Fatalf("with nothing taken the mark is %d, want LowWater %d", got, low)
	}
	// Take as fast as the batches come: tens of thousands a second, 40 ms of which is far above
	// MaxLowWater.
	deadline := time.Now().Add(5 * time.Second)
	for lowWater(c) < most && time.Now().Before(deadline) {
		for range batch {
			if _, err := c.Next(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := lowWater(c); got > most {
			t.Fatalf("the mark is %d, above MaxLowWater %d", got, most)
		}
	}
	if got := lowWater(c); got != most {
		t.Fatalf("after 5 s of taking IDs from batches 40 ms late the mark is %d, want MaxLowWater %d", got, most)
	}
	if got := gen.most.Load(); got > most/batch {
		t.Fatalf("%d refills in flight at once, want no more than %d (MaxLowWater %d, Batch %d)", got, most/batch, most, batch)
	}
	time.Sleep(100 * time.Millisecond)
	if got := bufferLevel(c); got >= 2*most {
		t.Fatalf("the buffer holds %v IDs with nobody taking them, want fewer than %d", got, 2*most)
	}
}

// hangsOnce is a fakeGen whose first call hangs until release is closed.
type hangsOnce struct {
	*fakeGen
	first   atomic.Bool
	release chan struct{}
}

func (h *hangsOnce) GenerateBatch(ctx context.Context, req *connect.Request[idgenv1.GenerateBatchRequest]) (*connect.Response[idgenv1.GenerateBatchResponse], error) {
	if h.first.CompareAndSwap(false, true) {
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	time.Sleep(time.Millisecond)
	return h.fakeGen.GenerateBatch(ctx, req)
}

// TestNotOverdueWhileAnswering: one call to the local endpoint hangs while its other calls answer;
// refills stay on the local endpoint (it is not frozen: batches keep coming from it), and a batch
// from the peer is only ever a hedge (the buffer ran empty behind the hung call).
func TestNotOverdueWhileAnswering(t *testing.T) {
	local := &hangsOnce{fakeGen: &fakeGen{region: 0, health: grpchealth.NewStaticChecker(idgenv1connect.IdServiceName)}, release: make(chan struct{})}
	defer close(local.release)
	mux := http.NewServeMux()
	mux.Handle(idgenv1connect.NewIdServiceHandler(local))
	mux.Handle(grpchealth.NewHandler(local.health))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	peer, peerURL := serve(t, 1)
	c, err := idclient.New(idclient.Config{Endpoints: []string{srv.URL, peerURL}, Batch: 10, LowWater: 40, MaxLowWater: 40,
		HedgeAfter: 50 * time.Millisecond, CallTimeout: 10 * time.Second, ProbeEvery: time.Hour, HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); {
		if _, err := c.Next(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Microsecond)
	}
	hedges := testutil.ToFloat64(c.Collectors()[4])
	if got := float64(peer.batches.Load()); got > hedges {
		t.Fatalf("%v batches from the peer and %v hedged calls, with the local endpoint answering all but one call (%d batches): refills went to the peer while batches kept coming from the local one",
			got, hedges, local.batches.Load())
	}
	if local.batches.Load() < 5 {
		t.Fatalf("%d batches from the local endpoint in 400 ms, want its refills to keep going there", local.batches.Load())
	}
	t.Logf("%d local batches, %d from the peer, %v hedged calls", local.batches.Load(), peer.batches.Load(), hedges)
}
