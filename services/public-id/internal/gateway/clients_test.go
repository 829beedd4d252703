package gateway

import (
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRateTableIsBounded: 300,000 source addresses leave at most the table's size of buckets,
// and a heap that grows by the table, not by the addresses.
func TestRateTableIsBounded(t *testing.T) {
	l := newClientLimiter(50, 100, 1<<16)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	now := time.Now()
	for i := range 300_000 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if ok, _ := l.take(addrKey(a), now); !ok {
			t.Fatalf("client %d refused its first request", i)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("300,000 clients: %d buckets kept, heap +%.1f MB", l.len(), float64(grown)/(1<<20))
	if l.len() != 1<<16 {
		t.Fatalf("%d buckets, want the table's size %d", l.len(), 1<<16)
	}
	if grown > 32<<20 {
		t.Fatalf("heap grew by %d bytes for a table of %d", grown, 1<<16)
	}
	// A client still in the table keeps its bucket: its burst is spent.
	a := netip.MustParseAddr("192.0.2.1")
	for range 100 {
		l.take(addrKey(a), now)
	}
	if ok, wait := l.take(addrKey(a), now); ok || wait <= 0 {
		t.Fatalf("the 101st request of a burst of 100 passed (%v %v)", ok, wait)
	}
}

func TestClientKey(t *testing.T) {
	trusted, err := ParseTrustedProxies("10.0.0.0/8, 192.0.2.7")
	if err != nil {
		t.Fatal(err)
	}
	c, err := newClientAddr(trusted)
	if err != nil {
		t.Fatal(err)
	}
	key := func(peer, xff string) string {
		r := &http.Request{RemoteAddr: peer, Header: http.Header{}}
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		return addrKey(c.addr(r)).addr.String()
	}
	for _, tt := range []struct{ name, peer, xff, want string }{
		{"direct", "198.51.100.1:5000", "", "198.51.100.1"},
		{"forged from outside", "198.51.100.1:5000", "203.0.113.5", "198.51.100.1"},
		{"behind the load balancer", "10.1.2.3:5000", "203.0.113.5", "203.0.113.5"},
		{"forged left of the real client", "10.1.2.3:5000", "1.1.1.1, 203.0.113.5, 10.9.9.9", "203.0.113.5"},
		{"a trusted single address", "192.0.2.7:443", "203.0.113.6", "203.0.113.6"},
		{"garbage header", "10.1.2.3:5000", "nonsense", "10.1.2.3"},
		{"IPv6 by /64", "[2001:db8:1:2:aaaa::1]:443", "", "2001:db8:1:2::"},
		{"IPv4 in IPv6", "[::ffff:198.51.100.1]:5000", "", "198.51.100.1"},
	} {
		if got := key(tt.peer, tt.xff); got != tt.want {
			t.Errorf("%s: key %s, want %s", tt.name, got, tt.want)
		}
	}
	if _, err := ParseTrustedProxies("10.0.0.0/33"); err == nil {
		t.Fatal("a bad CIDR range was accepted")
	}
}

// TestRateBucketOfConcurrentFirstRequests: a client's first requests at once share one bucket:
// of 64, exactly its burst passes.
func TestRateBucketOfConcurrentFirstRequests(t *testing.T) {
	now := time.Now()
	for round := range 20 {
		l := newClientLimiter(0.001, 10, 1<<10)
		key := addrKey(netip.AddrFrom4([4]byte{192, 0, 2, byte(round)}))
		var passed atomic.Int64
		var start, wg sync.WaitGroup
		start.Add(1)
		for range 64 {
			wg.Go(func() {
				start.Wait()
				if ok, _ := l.take(key, now); ok {
					passed.Add(1)
				}
			})
		}
		start.Done()
		wg.Wait()
		if passed.Load() != 10 {
			t.Fatalf("round %d: %d of 64 first requests passed, want the burst of 10", round, passed.Load())
		}
	}
}

// TestClientKeyString: a client's part of its rate store key: its address (an IPv6 one by its
// /64) or its API key's hash, never the key itself.
func TestClientKeyString(t *testing.T) {
	for _, tt := range []struct {
		key  clientKey
		want string
	}{
		{addrKey(netip.MustParseAddr("203.0.113.5")), "a:203.0.113.5"},
		{addrKey(netip.MustParseAddr("2001:db8:1:2:aaaa::1")), "a:2001:db8:1:2::"},
		{apiKeyKey("secret-key"), "k:"},
	} {
		got := tt.key.String()
		if !strings.HasPrefix(got, tt.want) || (tt.key.keyed && (len(got) != 2+32 || strings.Contains(got, "secret"))) || (!tt.key.keyed && got != tt.want) {
			t.Errorf("key %+v: %q, want %q (a key: k: and 32 hex digits of its hash)", tt.key, got, tt.want)
		}
	}
}
