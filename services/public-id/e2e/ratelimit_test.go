package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
)

// rateErrors reads idgen_gateway_rate_store_errors_total from /metrics.
func rateErrors(t *testing.T, g *gw) int {
	t.Helper()
	return int(g.metrics(t).Get(t, "idgen_gateway_rate_store_errors_total", testenv.Labels{"region": "us-east-1"}))
}

// burst sends n requests for path to the gateways of gws in turn, as fast as they answer, and
// counts the answers by status; slowest is the longest any took.
func burst(t *testing.T, n int, path string, gws ...*gw) (codes map[int]int, slowest time.Duration) {
	t.Helper()
	codes = map[int]int{}
	for i := range n {
		start := time.Now()
		a := gws[i%len(gws)].do(t, "GET", path)
		slowest = max(slowest, time.Since(start))
		codes[a.code]++
		if a.code == 429 && a.header.Get("Retry-After") != "1" {
			t.Errorf("429 with Retry-After %q, want 1 at 5 requests a second", a.header.Get("Retry-After"))
		}
	}
	return codes, slowest
}

// rateKeys lists the keys of the Redis at addr that match pattern.
func rateKeys(t *testing.T, addr, pattern string) []string {
	t.Helper()
	out, err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", strings.TrimPrefix(addr, "127.0.0.1:"), "--scan", "--pattern", pattern).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))
}

// TestSharedRateLimit: two gateway processes on one Redis (which holds the mapping store too)
// allow a client --rate-per-client once between them: of 40 requests sent to both in turn at 5
// a second (burst 10), 10 pass and the refill while they are sent, where two gateways limiting on
// their own pass 20 or more.
// The limiter's keys are rate:rl:*, beside the mapping store's pid:* and tok:*.
func TestSharedRateLimit(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	routes := limitRoutesFile(t, limitRoute("order", "http://127.0.0.1:1", ""))
	shared := []string{"--rate-per-client", "5", "--rate-redis", "redis:" + r.Addr}
	a, b := startGateway(t, r.Addr, routes, shared...), startGateway(t, r.Addr, routes, shared...)
	a.publish(t, newID(), "ord")
	start := time.Now()
	codes, _ := burst(t, 40, "/nowhere", a, b)
	// One bucket: 10 at once, and 5 a second more while the burst lasts; a bucket a gateway
	// would pass 20, and 10 a second.
	most := 10 + int(5*time.Since(start).Seconds()) + 1
	t.Logf("40 requests to two gateways sharing 5/s (burst 10) in %v: %v", time.Since(start), codes)
	if passed := codes[404]; passed < 10 || passed > most || codes[429] != 40-passed {
		t.Errorf("%v: want 10 to %d passed (one burst between the two gateways, and its refill), the rest 429", codes, most)
	}
	if n := counter(t, a.metrics(t), "", "rate_limited") + counter(t, b.metrics(t), "", "rate_limited"); n != codes[429] {
		t.Errorf("rate_limited counted %d by the two gateways, want %d", n, codes[429])
	}
	if keys := rateKeys(t, r.Addr, "rate:rl:gw:*"); len(keys) != 1 || keys[0] != "rate:rl:gw:a:127.0.0.1" {
		t.Errorf("limiter keys %q, want the client's rate:rl:gw:a:127.0.0.1", keys)
	}
	if keys := rateKeys(t, r.Addr, "pid:*"); len(keys) == 0 {
		t.Error("the mapping store's keys are gone from the shared Redis")
	}
	if n := rateErrors(t, a) + rateErrors(t, b); n != 0 {
		t.Errorf("rate store errors %d, want 0", n)
	}
}

// TestFrozenRateRedis: while the Redis of the rates is frozen, a gateway answers every request
// within --rate-redis-timeout and a little more, by its own limiter (the burst of 10, then 429s:
// never unlimited), counts each such check in idgen_gateway_rate_store_errors_total and logs the
// failures once, not per request; thawed, the Redis counts again.
func TestFrozenRateRedis(t *testing.T) {
	store, rates := testenv.StartRedis(t, t.TempDir()), testenv.StartRedis(t, t.TempDir())
	g := startGateway(t, store.Addr, limitRoutesFile(t, limitRoute("order", "http://127.0.0.1:1", "")),
		"--rate-per-client", "5", "--rate-redis", "redis://"+rates.Addr, "--rate-redis-timeout", "50ms")
	rates.Freeze(t)
	start := time.Now()
	codes, slowest := burst(t, 30, "/nowhere", g)
	took := time.Since(start)
	// The gateway's own bucket: 10 at once, and 5 a second more while the burst lasts.
	most := 10 + int(5*took.Seconds()) + 1
	t.Logf("frozen rate Redis: 30 requests in %v: %v, the slowest in %v; at most %d may pass", took, codes, slowest, most)
	if passed := codes[404]; passed < 10 || passed > most || codes[429] != 30-passed {
		t.Errorf("frozen rate Redis: %v, want the gateway's own burst of 10 passed (at most %d with its refill), the rest 429", codes, most)
	}
	if slowest > time.Second {
		t.Errorf("frozen rate Redis: a request took %v, want the 50 ms timeout and little more", slowest)
	}
	if n := rateErrors(t, g); n != 30 {
		t.Errorf("rate store errors %d, want 30", n)
	}
	logHas(t, g, "the rate limits' Redis failed", `"failures":1`)
	if n := strings.Count(g.p.Tail(0), "the rate limits' Redis failed"); n != 1 {
		t.Errorf("%d log lines of the frozen Redis for 30 failures, want 1", n)
	}
	rates.Thaw()
	before := 0
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		before = rateErrors(t, g)
		g.do(t, "GET", "/nowhere")
		return rateErrors(t, g) == before, "the rate checks still fail after the thaw"
	})
	if keys := rateKeys(t, rates.Addr, "rate:rl:gw:*"); len(keys) != 1 {
		t.Errorf("after the thaw: limiter keys %q, want the client's", keys)
	}
}

// TestRateRedisTLS: a rediss:// rate Redis whose certificate a private CA issued, with a password,
// through --rate-redis-ca; the gateway refuses to start when the Redis refuses its password or
// its certificate does not verify, saying so, and never repeats the URL (it holds the password).
func TestRateRedisTLS(t *testing.T) {
	const password = "rate-secret"
	store := testenv.StartRedis(t, t.TempDir())
	rates := testenv.StartRedisTLS(t, t.TempDir(), "--requirepass", password)
	routes := limitRoutesFile(t, limitRoute("order", "http://127.0.0.1:1", ""))
	g := startGateway(t, store.Addr, routes, "--rate-per-client", "1",
		"--rate-redis", "rediss://:"+password+"@"+rates.TLSAddr, "--rate-redis-ca", rates.CAFile)
	codes, _ := burst(t, 5, "/nowhere", g)
	if codes[404] != 2 || codes[429] != 3 || rateErrors(t, g) != 0 {
		t.Errorf("over TLS: %v, %d errors, want the burst of 2 passed by the Redis", codes, rateErrors(t, g))
	}
	for _, tt := range []struct{ name, url, ca, want string }{
		{"a wrong password", "rediss://:wrong-" + password + "@" + rates.TLSAddr, rates.CAFile, "WRONGPASS"},
		{"an unknown CA", "rediss://:" + password + "@" + rates.TLSAddr, "", "certificate"},
	} {
		args := []string{"--listen", fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)), "--metrics-listen", "",
			"--store", "redis:" + store.Addr, "--routes", routes, "--rate-redis", tt.url}
		if tt.ca != "" {
			args = append(args, "--rate-redis-ca", tt.ca)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, gatewayBin(t), args...).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), "--rate-redis") || !strings.Contains(string(out), tt.want) || strings.Contains(string(out), password) {
			t.Errorf("%s: %v, %s; want a refusal naming --rate-redis and %q, without the password", tt.name, err, out, tt.want)
		}
	}
}
