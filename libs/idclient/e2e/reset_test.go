package idclient_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idclient"
)

// resetting is an endpoint whose connections are reset as soon as they are made: what a load
// balancer answers while its target has just died (the NLB's "target refused" reset).
func resetting(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.(*net.TCPConn).SetLinger(0) // close sends a reset
			c.Close()
		}
	}()
	return "http://" + l.Addr().String()
}

// TestMovesOnConnectionReset: a local endpoint that resets every connection moves the client to
// its peer at the first failed call, not at the next health probe (here a minute away).
func TestMovesOnConnectionReset(t *testing.T) {
	_, peerURL := serve(t, 0)
	c, err := idclient.New(idclient.Config{Endpoints: []string{resetting(t), peerURL}, Batch: 10, ProbeEvery: time.Minute,
		HedgeAfter: -1, HTTPClient: &http.Client{Transport: &http.Transport{Proxy: nil}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	id, err := c.Next(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := c.Decode(id); d.Region != 0 {
		t.Fatalf("the first ID is from region %d, want the peer's (0)", d.Region)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the first ID took %v: the client waited for something other than the reset", took)
	}
	if c.Active() != peerURL {
		t.Fatalf("active %s, want the peer", c.Active())
	}
}
