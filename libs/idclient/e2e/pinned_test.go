package idclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/grpchealth"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/testenv"
)

// target is one generator behind the fake NLB: its IdService and gRPC health, and the /healthz
// the balancer checks, which answers 503 while it is down.
func target(t *testing.T, region int) (*fakeGen, *httptest.Server, *atomic.Bool) {
	f := &fakeGen{region: region, health: grpchealth.NewStaticChecker(idgenv1connect.IdServiceName)}
	down := &atomic.Bool{}
	mux := http.NewServeMux()
	mux.Handle(idgenv1connect.NewIdServiceHandler(f))
	mux.Handle(grpchealth.NewHandler(f.health))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.Protocols = new(http.Protocols) // HTTP/1.1 and h2c, as the generator serves
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return f, srv, down
}

// TestOneGeneratorWithoutLeaseDoesNotMove: the region's load balancer has two generators, the
// client's connection is pinned to one, and that one loses its lease (503, unhealthy at the
// balancer) while the other serves. The client asks again on a new connection, reaches the
// other, and stays on its region; with both down it moves to its peer.
func TestOneGeneratorWithoutLeaseDoesNotMove(t *testing.T) {
	lb := testenv.StartFakeNLB(t, testenv.NLBConfig{Interval: 20 * time.Millisecond, HealthyThreshold: 1, UnhealthyThreshold: 1})
	gens := map[string]*fakeGen{}
	downs := map[string]*atomic.Bool{}
	for _, name := range []string{"a", "b"} {
		f, srv, down := target(t, 2)
		gens[name], downs[name] = f, down
		addr := strings.TrimPrefix(srv.URL, "http://")
		lb.Register(name, addr, srv.URL+"/healthz")
	}
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return lb.State("a") == "healthy" && lb.State("b") == "healthy", "targets not healthy"
	})
	_, peer, _ := target(t, 0)
	peerURL := peer.URL
	c, err := idclient.New(idclient.Config{Endpoints: []string{lb.URL(), peerURL}, Batch: 10, LowWater: 1,
		ProbeEvery: time.Minute, HedgeAfter: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	next := func() (idcore.ID, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		return c.Next(ctx)
	}
	if _, err := next(); err != nil {
		t.Fatal(err)
	}
	pinned := "a"
	if lb.Stats().Flows["b"] > 0 {
		pinned = "b"
	}
	gens[pinned].setDown(true) // 503 no_lease, health not_serving
	downs[pinned].Store(true)
	testenv.Eventually(t, 5*time.Second, func() (bool, string) { return lb.State(pinned) == "unhealthy", "still healthy" })
	for range 50 {
		id, err := next()
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := c.Decode(id); d.Region != 2 || c.Active() != lb.URL() {
			t.Fatalf("an ID from region %d, active %s: the client left its region with one generator of two without a lease", d.Region, c.Active())
		}
	}

	for name := range gens {
		gens[name].setDown(true)
		downs[name].Store(true)
	}
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		id, err := next()
		if err != nil {
			return false, err.Error()
		}
		d, _ := c.Decode(id)
		return d.Region == 0, "with every generator of its region down, IDs still from region " + string(rune('0'+d.Region))
	})
}
