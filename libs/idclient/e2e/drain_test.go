package idclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/grpchealth"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/testenv"
)

// drainingOnce answers the health check not_serving on its first call only: one generator of the
// region draining (a rolling deploy) while the next connection reaches another that serves.
type drainingOnce struct{ calls atomic.Int64 }

func (d *drainingOnce) Check(context.Context, *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if d.calls.Add(1) == 1 {
		return &grpchealth.CheckResponse{Status: grpchealth.StatusNotServing}, nil
	}
	return &grpchealth.CheckResponse{Status: grpchealth.StatusServing}, nil
}

// TestOneDrainingAnswerDoesNotMove: a single not_serving from the local endpoint, answered
// serving when asked again at once, leaves the client on its region; not_serving twice moves it.
func TestOneDrainingAnswerDoesNotMove(t *testing.T) {
	local, _ := serve(t, 2)
	d := &drainingOnce{}
	mux := http.NewServeMux()
	mux.Handle(idgenv1connect.NewIdServiceHandler(local))
	mux.Handle(grpchealth.NewHandler(d))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, peerURL := serve(t, 0)
	c, err := idclient.New(idclient.Config{Endpoints: []string{srv.URL, peerURL}, Batch: 10, ProbeEvery: 20 * time.Millisecond, HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for d.calls.Load() < 10 {
		if c.Active() != srv.URL {
			t.Fatalf("moved to %s after one not_serving answer", c.Active())
		}
		time.Sleep(5 * time.Millisecond)
	}

	// The whole region not serving: two answers in a row, and the client moves.
	local.setDown(true)
	c2, err := idclient.New(idclient.Config{Endpoints: []string{localURLOf(t, local), peerURL}, Batch: 10, ProbeEvery: 20 * time.Millisecond,
		HTTPClient: http.DefaultClient, HedgeAfter: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return c2.Active() == peerURL, "the client did not move with its region not serving: on " + c2.Active()
	})
}

// localURLOf serves f's IdService and its static health (which setDown turns not_serving).
func localURLOf(t *testing.T, f *fakeGen) string {
	mux := http.NewServeMux()
	mux.Handle(idgenv1connect.NewIdServiceHandler(f))
	mux.Handle(grpchealth.NewHandler(f.health))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}
