package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
)

// rollProc is one public-ID process of a rolling deploy.
type rollProc struct {
	*proc.Proc
	name, addr string
}

func (x *rollProc) NLBName() string { return x.name }

// launchRollProc starts a public-ID process and does not wait for it: the fake load balancer's
// health checks decide when it gets traffic.
func launchRollProc(t *testing.T, bin, name string, args ...string) *rollProc {
	t.Helper()
	p := &rollProc{name: name, addr: fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))}
	p.Proc = proc.StartT(t, proc.Spec{Bin: bin, Name: name, Args: append([]string{"--listen", p.addr}, args...)})
	return p
}

// rollTally counts requests, keeps the first failures, and the mappings made.
type rollTally struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	first      []string
	pubs       map[int64]string // internal → public, as each publish answered
}

func (c *rollTally) fail(what string) {
	if c.failed.Add(1) <= 10 {
		c.mu.Lock()
		c.first = append(c.first, time.Now().Format("15:04:05.000")+" "+what)
		c.mu.Unlock()
	}
}

// published records a publish's answer; a second answer for the same internal ID must be the
// same public ID.
func (c *rollTally) published(internal int64, pub string) {
	c.mu.Lock()
	prev, seen := c.pubs[internal]
	if !seen {
		c.pubs[internal] = pub
	}
	c.mu.Unlock()
	if seen && prev != pub {
		c.fail(fmt.Sprintf("internal ID %d published as %s, then as %s", internal, prev, pub))
		return
	}
	c.ok.Add(1)
}

func (c *rollTally) someMapping(n int64) (int64, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pub, ok := c.pubs[n]
	return n, pub, ok
}

// TestRollingDeploy: three public-ID processes on one Redis, behind a fake NLB that follows
// their /healthz as an NLB does (testenv.FakeNLB), are each SIGTERM'd and replaced in turn while
// callers keep publishing and resolving: twelve plain HTTP/1.1 keep-alive callers (a POST per
// new mapping, a republish and a GET resolve now and then) and four Connect clients over h2c. No
// request fails, no public ID is given to two internal IDs or differs between publishes of one,
// and every mapping resolves afterwards.
//
// For the figure before the fix: IDGEN_ROLLING_DELAY sets --deregistration-delay ("none" passes
// no such flag), IDGEN_ROLLING_PUBLIC_ID a public-id binary (another commit's); with either set
// the test reports the failed requests rather than failing on them.
func TestRollingDeploy(t *testing.T) {
	delay, bin := "2s", publicIDBin(t)
	measuring := false
	if v := os.Getenv("IDGEN_ROLLING_DELAY"); v != "" {
		delay, measuring = v, true
	}
	if v := os.Getenv("IDGEN_ROLLING_PUBLIC_ID"); v != "" {
		bin, measuring = v, true
	}
	redis := testenv.StartRedis(t, t.TempDir())
	args := []string{"--insecure-dev", "--store", "redis:" + redis.Addr, "--drain", "5s"}
	if delay != "none" {
		args = append(args, "--deregistration-delay", delay)
	}
	lb := testenv.StartFakeNLB(t, testenv.NLBConfig{Interval: 100 * time.Millisecond, Timeout: time.Second,
		HealthyThreshold: 3, UnhealthyThreshold: 3})
	launch := func(name string) *rollProc {
		p := launchRollProc(t, bin, name, args...)
		lb.Register(name, p.addr, "http://"+p.addr+"/healthz")
		return p
	}
	fleet := []*rollProc{launch("pid-0"), launch("pid-1"), launch("pid-2")}
	for _, p := range fleet {
		testenv.Eventually(t, 30*time.Second, lb.Healthy(p.name))
	}

	tally := &rollTally{pubs: map[int64]string{}}
	var next atomic.Int64
	next.Store(time.Now().UnixNano() & (1<<40 - 1))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 12 {
		wg.Go(func() {
			tr := &http.Transport{Protocols: new(http.Protocols), MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute}
			tr.Protocols.SetHTTP1(true)
			hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			defer tr.CloseIdleConnections()
			var mine []int64
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond): // the load's pace
				}
				internal := next.Add(1)
				if i%10 == 9 && len(mine) > 0 {
					internal = mine[(i/10+w)%len(mine)] // a republish: the same public ID
				}
				if i%4 == 3 && len(mine) > 0 {
					in, pub, _ := tally.someMapping(mine[(i/4)%len(mine)])
					resp, err := hc.Get(lb.URL() + "/v1/public-ids/" + pub)
					if err != nil {
						tally.fail("GET: " + err.Error())
						continue
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || !strings.Contains(string(body), `"internal_id":"`+strconv.FormatInt(in, 10)+`"`) {
						tally.fail(fmt.Sprintf("GET %s: %d %s, want internal ID %d", pub, resp.StatusCode, body, in))
						continue
					}
					tally.ok.Add(1)
					continue
				}
				resp, err := hc.Post(lb.URL()+"/v1/public-ids", "application/json",
					strings.NewReader(`{"internal_id":"`+strconv.FormatInt(internal, 10)+`"}`))
				if err != nil {
					tally.fail("POST: " + err.Error())
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				var b struct {
					PublicID string `json:"public_id"`
				}
				switch {
				case err != nil:
					tally.fail("POST: reading the body: " + err.Error())
				case resp.StatusCode != 200 || json.Unmarshal(body, &b) != nil || b.PublicID == "":
					tally.fail(fmt.Sprintf("POST: %d %s", resp.StatusCode, body))
				default:
					tally.published(internal, b.PublicID)
					mine = append(mine, internal)
				}
			}
		})
	}
	for range 4 {
		tr := &http.Transport{Protocols: new(http.Protocols), DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext}
		tr.Protocols.SetUnencryptedHTTP2(true)
		c := idgenv1connect.NewPublicIdServiceClient(&http.Client{Transport: tr, Timeout: 10 * time.Second}, lb.URL())
		wg.Go(func() {
			defer tr.CloseIdleConnections()
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
				internal := next.Add(1)
				resp, err := c.Publish(context.Background(), connect.NewRequest(&idgenv1.PublishRequest{InternalId: internal}))
				if err != nil {
					tally.fail("Connect Publish: " + err.Error())
					continue
				}
				tally.published(internal, resp.Msg.GetPublicId())
			}
		})
	}
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		return tally.ok.Load() >= 1000, fmt.Sprintf("%d requests served before the deploy, want 1000", tally.ok.Load())
	})

	deployed := testenv.RollingDeploy(t, lb, fleet, "pid", launch)
	after := tally.ok.Load()
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		return tally.ok.Load() >= after+500, fmt.Sprintf("%d requests served since the deploy, want 500", tally.ok.Load()-after)
	})
	close(stop)
	wg.Wait()

	// No public ID for two internal IDs, and every mapping resolves on the new fleet.
	owner := map[string]int64{}
	dups := 0
	for in, pub := range tally.pubs {
		if prev, ok := owner[pub]; ok && prev != in {
			dups++
		}
		owner[pub] = in
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	unresolved, checked := 0, 0
	for in, pub := range tally.pubs {
		if checked++; checked > 3000 {
			break
		}
		resp, err := hc.Get(lb.URL() + "/v1/public-ids/" + pub)
		if err != nil {
			unresolved++
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"internal_id":"`+strconv.FormatInt(in, 10)+`"`) {
			unresolved++
		}
	}
	st := lb.Stats()
	failed := tally.failed.Load()
	t.Logf("rolling deploy of 3 public-ID services (--deregistration-delay %s) in %v: %d requests served, %d failed, %d mappings, %d public IDs given to two internal IDs, %d of %d mappings checked not resolving; load balancer: %d connections without a healthy target, %d reset because the target refused, connections per target %v",
		delay, deployed.Round(time.Millisecond), tally.ok.Load(), failed, len(tally.pubs), dups, unresolved, min(checked, 3000),
		st.NoTarget, st.DialFailed, st.Flows)
	for _, e := range lb.Events() {
		t.Log("load balancer: " + e)
	}
	for _, f := range tally.first {
		t.Log("failed: " + f)
	}
	if dups != 0 || unresolved != 0 {
		t.Fatalf("%d public IDs given twice, %d mappings not resolving", dups, unresolved)
	}
	if !measuring && failed != 0 {
		t.Fatalf("%d requests failed during the rolling deploy", failed)
	}
}
