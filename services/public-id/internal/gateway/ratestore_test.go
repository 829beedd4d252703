package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
	"github.com/redis/go-redis/v9"
)

// rateRedis starts a redis-server and returns it with a client of it.
func rateRedis(t *testing.T) (*testenv.Redis, *redis.Client) {
	t.Helper()
	r := testenv.StartRedis(t, t.TempDir())
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	return r, rdb
}

// tally sends n requests for path, in turn to each gateway of gws, and counts the answers by
// status.
func tally(t *testing.T, n int, path string, gws ...*limGateway) (codes map[int]int, last limAnswer) {
	t.Helper()
	codes = map[int]int{}
	for i := range n {
		last = do(t, "GET", gws[i%len(gws)].url+path)
		codes[last.code]++
	}
	return codes, last
}

// TestSharedRate: two gateways on one Redis allow a client the rate once between them, not once
// each: of a burst of 40 requests sent to both in turn at 5 a second (burst 10), about 10 pass,
// where each gateway on its own would pass 10 (20 in all); a route's rate_per_client is shared
// the same way, and its 429's Retry-After is redis_rate's wait in whole seconds, rounded up.
func TestSharedRate(t *testing.T) {
	_, rdb := rateRedis(t)
	up, _ := noteUpstream(t, func() string { return "hello" })
	file := twoRoutes("http://127.0.0.1:1", "", up.URL, `"rate_per_client": 0.1,`)
	o := gateway.Options{RatePerClient: 5, RateRedis: rdb}
	a, b := newLimGateway(t, file, o), newLimGateway(t, file, o)
	start := time.Now()
	codes, last := tally(t, 40, "/nowhere", a, b)
	// One bucket: 10 at once, and 5 a second more while the burst lasts. Two (one a gateway)
	// would pass 20 and 10 a second.
	most := 10 + int(5*time.Since(start).Seconds()) + 1
	t.Logf("40 requests to two gateways sharing a rate of 5/s, burst 10, in %v: %v", time.Since(start), codes)
	if passed := codes[404]; passed < 10 || passed > most || codes[429] != 40-passed {
		t.Errorf("%d of 40 passed (%v), want the one burst of 10 (at most %d with the refill)", passed, codes, most)
	}
	if last.code != 429 || last.header.Get("Retry-After") != "1" {
		t.Errorf("past the burst: %d, Retry-After %q, want 429 with 1", last.code, last.header.Get("Retry-After"))
	}
	if n := a.count(t, "", "rate_limited") + b.count(t, "", "rate_limited"); n != float64(codes[429]) {
		t.Errorf("rate_limited counted %v, want %d", n, codes[429])
	}

	// A route's rate: 0.1 a second, burst 1. The first request (to a) takes it, the second (to b)
	// waits for the next, about 10 s away.
	o = gateway.Options{RateRedis: rdb}
	a, b = newLimGateway(t, file, o), newLimGateway(t, file, o)
	if got := do(t, "GET", a.url+"/orders/"+a.publish(t, limID(20), "ord")); got.code != 200 {
		t.Fatalf("the route's first request: %d %s", got.code, got.body)
	}
	got := do(t, "GET", b.url+"/orders/"+b.publish(t, limID(21), "ord"))
	if got.code != 429 || got.header.Get("Retry-After") != "10" {
		t.Errorf("the route's second request, on the other gateway: %d, Retry-After %q, want 429 with 10", got.code, got.header.Get("Retry-After"))
	}
	if n := b.count(t, "fast", "rate_limited"); n != 1 {
		t.Errorf("rate_limited{route=fast} = %v, want 1", n)
	}
	// The keys: the limiter's own, one per limit and client.
	keys, err := rdb.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"rate:rl:gw:a:127.0.0.1": true, "rate:rl:route:fast:a:127.0.0.1": true}
	for _, k := range keys {
		if !want[k] {
			t.Errorf("key %q in the Redis, want only %v", k, want)
		}
		delete(want, k)
	}
	if len(want) > 0 {
		t.Errorf("keys %v missing from the Redis, which holds %q", want, keys)
	}
	if n := a.counter(t, "idgen_gateway_rate_store_errors_total", nil) + b.counter(t, "idgen_gateway_rate_store_errors_total", nil); n != 0 {
		t.Errorf("rate store errors %v, want 0", n)
	}
}

// TestRateRedisFails: while the Redis is frozen, then down, every request is answered within the
// timeout by the gateway's own limiter, at the same rate (a burst of 10, then 429s: never no
// limit), each such check is counted, and the failures are logged once, not per request;
// /healthz never asks the Redis. Once
// the Redis answers again the checks are its own again.
//
// The check timeout is a second, not the default 50 ms: every check of the Redis while it is up
// must be the Redis's own, and on a loaded machine a round trip (the first one also dials and
// loads the script) outlasts 50 ms now and then, which the gateway rightly answers with its own
// limiter. The requests to the frozen Redis are sent at once, so that they cost one timeout, not
// twenty.
func TestRateRedisFails(t *testing.T) {
	const timeout = time.Second
	r, rdb := rateRedis(t)
	clock := &testClock{t: time.Now()} // the in-process limiter's: no refill during the test
	g := newLimGateway(t, twoRoutes("http://127.0.0.1:1", "", "http://127.0.0.1:1", ""),
		gateway.Options{RatePerClient: 5, RateRedis: rdb, RateRedisTimeout: timeout, Now: clock.now})
	if a := do(t, "GET", g.url+"/nowhere"); a.code != 404 {
		t.Fatalf("with the Redis up: %d %s", a.code, a.body)
	}
	errs := func() float64 { return g.counter(t, "idgen_gateway_rate_store_errors_total", nil) }
	r.Freeze(t)
	// /healthz is limited in-process only: no wait on the Redis, no failure counted; it takes one
	// of the client's local burst.
	if a := do(t, "GET", g.url+"/healthz"); a.code != 200 || errs() != 0 {
		t.Errorf("/healthz with the Redis frozen: %d, %v rate store errors, want 200 with none (no check in the Redis)", a.code, errs())
	}
	codes := map[int]int{}
	var slowest time.Duration
	for _, a := range doAtOnce(t, 20, g.url+"/nowhere") {
		codes[a.code]++
		slowest = max(slowest, a.took)
		if a.code == 429 && a.header.Get("Retry-After") != "1" {
			t.Errorf("a 429 of the in-process limiter: Retry-After %q, want 1", a.header.Get("Retry-After"))
		}
	}
	t.Logf("frozen Redis: 20 requests answered %v, the slowest in %v", codes, slowest)
	if codes[404] != 9 || codes[429] != 11 {
		t.Errorf("frozen Redis: %v, want the in-process burst of 10 passed (9 after /healthz's) and 11 refused", codes)
	}
	// Under go-redis's own read timeout (3 s): the gateway's timeout is what answered.
	if slowest > 2*timeout {
		t.Errorf("frozen Redis: a request took %v, want the %v timeout and little more", slowest, timeout)
	}
	if n := errs(); n != 20 {
		t.Errorf("rate store errors %v, want 20", n)
	}
	if n := strings.Count(g.log(), "the rate limits' Redis failed"); n != 1 {
		t.Errorf("%d log lines of the failing Redis, want 1 for the 20 failures:\n%s", n, g.log())
	}

	// Thawed: the Redis's own checks again (its bucket for the client holds 9 of its 10).
	r.Thaw()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		before := errs()
		a := do(t, "GET", g.url+"/nowhere")
		return a.code == 404 && errs() == before, "after the thaw, the checks still fail"
	})
	before := errs()
	codes, _ = tally(t, 5, "/nowhere", g)
	if codes[404] != 5 || errs() != before {
		t.Errorf("after the thaw: %v, errors +%v, want 5 passed by the Redis", codes, errs()-before)
	}

	// Down: each check fails (within the timeout: go-redis dials again until then), and the
	// requests are limited here. Sent at once, as to the frozen Redis.
	r.Kill()
	codes = map[int]int{}
	slowest = 0
	for _, a := range doAtOnce(t, 5, g.url+"/nowhere") {
		codes[a.code]++
		slowest = max(slowest, a.took)
	}
	t.Logf("Redis down: 5 requests answered %v, the slowest in %v", codes, slowest)
	if codes[429] != 5 || errs() != before+5 {
		t.Errorf("Redis down: %v, errors +%v, want the 5 refused by the in-process limiter, whose burst is spent, and counted", codes, errs()-before)
	}
}

// doAtOnce sends n GET requests for url at once and returns their answers.
func doAtOnce(t *testing.T, n int, url string) []limAnswer {
	t.Helper()
	answers := make([]limAnswer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			t0 := time.Now()
			resp, err := client.Get(url)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			answers[i], errs[i] = limAnswer{resp.StatusCode, resp.Header, string(b), time.Since(t0)}, err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return answers
}

// TestRateRedisACL: the ACL the README gives the limiter's user (EVALSHA and EVAL, GET, SET and
// TIME inside the script, keys rate:rl:*) is enough; a user without the key pattern is refused
// with a Redis error, which the binary refuses to start with.
func TestRateRedisACL(t *testing.T) {
	r, admin := rateRedis(t)
	ctx := context.Background()
	for _, acl := range [][]any{
		{"ACL", "SETUSER", "limiter", "on", ">limiter-pw", "resetkeys", "~rate:rl:*", "resetchannels", "-@all", "+evalsha", "+eval", "+get", "+set", "+time"},
		{"ACL", "SETUSER", "mapper", "on", ">mapper-pw", "resetkeys", "~pid:*", "~tok:*", "resetchannels", "-@all", "+evalsha", "+eval", "+get", "+set", "+time"},
	} {
		if err := admin.Do(ctx, acl...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	as := func(user, pw string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: r.Addr, Username: user, Password: pw})
		t.Cleanup(func() { c.Close() })
		return c
	}
	if err := gateway.CheckRateRedis(ctx, as("limiter", "limiter-pw")); err != nil {
		t.Errorf("the README's ACL: %v", err)
	}
	var refused redis.Error
	if err := gateway.CheckRateRedis(ctx, as("mapper", "mapper-pw")); !errors.As(err, &refused) || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("a user without rate:rl:*: %v, want a NOPERM Redis error", err)
	}
	// The gateway's checks through the limiter's user.
	g := newLimGateway(t, twoRoutes("http://127.0.0.1:1", "", "http://127.0.0.1:1", ""),
		gateway.Options{RatePerClient: 1, RateRedis: as("limiter", "limiter-pw")})
	codes, _ := tally(t, 4, "/nowhere", g)
	if codes[404] != 2 || codes[429] != 2 || g.counter(t, "idgen_gateway_rate_store_errors_total", nil) != 0 {
		t.Errorf("through the limiter's user: %v, want its burst of 2 passed by the Redis", codes)
	}
}
