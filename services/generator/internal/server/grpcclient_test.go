package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/testenv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// TestGRPCClientCodes: what a plain grpc-go client meets. An unknown procedure is UNIMPLEMENTED
// (not an HTTP 404 the client cannot read), a deadline that has passed is DEADLINE_EXCEEDED and
// is counted as such, never as internal or unknown.
func TestGRPCClientCodes(t *testing.T) {
	r := start(t, baseConfig(t))
	r.waitReady(t)
	conn, err := grpc.NewClient(strings.TrimPrefix(r.url, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	var out idgenv1.GenerateResponse
	if err := conn.Invoke(ctx, "/idgen.v1.IdService/Generate", &idgenv1.GenerateRequest{}, &out); err != nil || out.Id <= 0 {
		t.Fatalf("Generate over gRPC: %v %v", out.Id, err)
	}
	for _, method := range []string{"/idgen.v1.IdService/Nope", "/idgen.v1.Nothing/Generate", "/other.v9.Svc/Call"} {
		err := conn.Invoke(ctx, method, &idgenv1.GenerateRequest{}, &out)
		if status.Code(err) != codes.Unimplemented {
			t.Errorf("%s: %v, want Unimplemented", method, err)
		}
	}
	past, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	// grpc-go refuses to send a call whose deadline has passed; one that runs out in flight
	// reaches the server with a tiny grpc-timeout.
	short, cancel2 := context.WithTimeout(ctx, time.Microsecond)
	defer cancel2()
	for _, c := range []context.Context{past, short} {
		err := conn.Invoke(c, "/idgen.v1.IdService/GenerateBatch", &idgenv1.GenerateBatchRequest{Count: 1000}, &idgenv1.GenerateBatchResponse{})
		if status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("a passed deadline: %v, want DeadlineExceeded", err)
		}
	}
	// A raw gRPC request with a deadline of one nanosecond reaches the handler already late.
	req, _ := http.NewRequest("POST", r.url+"/idgen.v1.IdService/GenerateBatch", strings.NewReader("\x00\x00\x00\x00\x03\x08\xe8\x07"))
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Grpc-Timeout", "1n")
	req.Header.Set("Te", "trailers")
	resp, err := h2cClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := resp.Trailer.Get("Grpc-Status") + resp.Header.Get("Grpc-Status"); got != "4" {
		t.Errorf("grpc-timeout 1n: grpc-status %q, want 4 (DEADLINE_EXCEEDED)", got)
	}
	m := testenv.Scrape(t, nil, r.url+"/metrics")
	count := func(code string) float64 {
		return m.Sum("idgen_server_requests_total", testenv.Labels{"code": code})
	}
	if count("internal") != 0 || count("unknown") != 0 || count("deadline_exceeded") == 0 {
		t.Errorf("deadlines counted as internal %v, unknown %v, deadline_exceeded %v; want only deadline_exceeded",
			count("internal"), count("unknown"), count("deadline_exceeded"))
	}
	// HEAD /healthz answers as GET does.
	if code, _, _ := testenv.Do(t, "HEAD", r.url+"/healthz", "", ""); code != 200 {
		t.Errorf("HEAD /healthz: %d", code)
	}
}

func grep(text, word string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// h2cClient speaks HTTP/2 without TLS, as gRPC clients do to a plaintext server.
func h2cClient() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Protocols: &p}}
}

// TestHealthWatchUnknownService: the gRPC health protocol, as grpc-go's health client speaks it.
// Check of an unknown service is NOT_FOUND; Watch of one sends SERVICE_UNKNOWN and stays open.
func TestHealthWatchUnknownService(t *testing.T) {
	r := start(t, baseConfig(t))
	r.waitReady(t)
	conn, err := grpc.NewClient(strings.TrimPrefix(r.url, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		resp, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: "idgen.v1.IdService"})
		return err == nil && resp.Status == healthpb.HealthCheckResponse_SERVING, fmt.Sprintf("Check of the service: %v %v", resp, err)
	})
	if _, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope.v1.Nothing"}); status.Code(err) != codes.NotFound {
		t.Fatalf("Check of an unknown service: %v, want NotFound", err)
	}
	stream, err := h.Watch(ctx, &healthpb.HealthCheckRequest{Service: "nope.v1.Nothing"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil || first.Status != healthpb.HealthCheckResponse_SERVICE_UNKNOWN {
		t.Fatalf("Watch of an unknown service: %v %v, want SERVICE_UNKNOWN", first, err)
	}
	// The stream stays open: the next Recv waits until the watch is ended by the client.
	next := make(chan error, 1)
	go func() { _, err := stream.Recv(); next <- err }()
	select {
	case err := <-next:
		t.Fatalf("the watch ended after SERVICE_UNKNOWN: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
}
