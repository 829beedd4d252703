package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/publicid"
)

// TestFrozenStore: a frozen Redis (SIGSTOP: connections open, nothing answers) never holds a
// customer or a calling service: while it is frozen, what a cache holds is still served (the
// gateway's cached order, the internal API's own publish), the gateway answers a public ID it has
// not cached 503 within --store-timeout, its /healthz 503 and the internal API's 200 within their
// bounds, and the internal API's resolve of a public ID it has not cached is a 503; once thawed,
// every call is served again.
func TestFrozenStore(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"%s","note":"ok"}`, strings.TrimPrefix(req.URL.Path, "/internal/order/"))
	}))
	t.Cleanup(up.Close)
	g := startGateway(t, r.Addr, limitRoutesFile(t, limitRoute("order", up.URL, "")), "--store-timeout", "500ms")
	order := newID()
	cachedPub := g.publish(t, order, "ord")
	if a := g.do(t, "GET", "/order/"+cachedPub); a.code != 200 {
		t.Fatalf("before the freeze: %d %s", a.code, a.body)
	}
	other := g.publish(t, newID(), "ord") // published by the internal API, never asked of the gateway
	maker, err := publicid.NewMaker("ord")
	if err != nil {
		t.Fatal(err)
	}
	unknown, _ := maker.New("ord") // well-formed, in no cache
	r.Freeze(t)
	type answer struct {
		what string
		code int
		body string
		took time.Duration
	}
	var mu sync.Mutex
	var got []answer
	var wg sync.WaitGroup
	ask := func(what, url string) {
		wg.Go(func() {
			start := time.Now()
			client := &http.Client{Timeout: 20 * time.Second}
			resp, err := client.Get(url)
			a := answer{what: what, took: time.Since(start)}
			if err != nil {
				a.body = err.Error()
			} else {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				a.code, a.body = resp.StatusCode, strings.TrimSpace(string(b))
			}
			mu.Lock()
			got = append(got, a)
			mu.Unlock()
		})
	}
	time.Sleep(1100 * time.Millisecond) // past the gateway's health answer's second
	ask("an uncached public ID", g.url+"/order/"+other)
	ask("a cached public ID", g.url+"/order/"+cachedPub)
	ask("the gateway's /healthz", g.url+"/healthz")
	ask("the internal API's resolve of one it published", g.api+"/v1/public-ids/"+other)
	ask("the internal API's resolve of another", g.api+"/v1/public-ids/"+unknown)
	ask("the internal API's /healthz", g.api+"/healthz")
	wg.Wait()
	want := map[string]int{"an uncached public ID": 503, "a cached public ID": 200, "the gateway's /healthz": 503,
		"the internal API's resolve of one it published": 200, "the internal API's resolve of another": 503, "the internal API's /healthz": 200}
	for _, a := range got {
		t.Logf("frozen store: %s: %d in %v: %.120s", a.what, a.code, a.took.Round(time.Millisecond), a.body)
		if a.code != want[a.what] || a.took > 2*time.Second {
			t.Errorf("frozen store: %s: %d after %v, want %d within 2 s", a.what, a.code, a.took, want[a.what])
		}
	}
	r.Thaw()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		a := g.do(t, "GET", "/order/"+other)
		return a.code == 200, fmt.Sprintf("after the thaw: %d %s", a.code, a.body)
	})
}
