// Package e2e runs the generator binary as real processes: failover of the client library when a
// region's generator dies and comes back, and graceful shutdown under load.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
	"github.com/idgen/idgen/libs/localstack/cmdline"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
)

// generatorBin builds the generator, once for every test binary of the run (proc's cache).
func generatorBin(t *testing.T) string {
	t.Helper()
	return proc.BuildT(t, "../cmd/generator")[0]
}

// gen is a generator process and its base URL.
type gen struct {
	*proc.Proc
	url string
}

// startGen starts a generator process (plaintext dev mode, warn clock: this machine's clock is
// not disciplined) and waits until /healthz says it can issue.
// startGen starts a generator on port in development mode, with c's flags and short leases (3 s,
// renewed every 500 ms, a 500 ms fence margin, a 5 s drain) unless c sets its own.
func startGen(t *testing.T, port int, c cmdline.Generator) *gen {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	c.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	for _, d := range []struct {
		v   *string
		def string
	}{{&c.Lease, "3s"}, {&c.Renew, "500ms"}, {&c.FenceMargin, "500ms"}, {&c.Drain, "5s"}} {
		if *d.v == "" {
			*d.v = d.def
		}
	}
	return &gen{proc.StartT(t, proc.Spec{Bin: generatorBin(t), Args: c.Args(), HealthURL: url + "/healthz"}), url}
}

func TestFailoverAndReturn(t *testing.T) {
	dir := t.TempDir()
	portA, portB := testenv.FreePort(t), testenv.FreePort(t)
	argsA := cmdline.Generator{Region: "us-east-1", LeaseStore: "sqlite:" + filepath.Join(dir, "us-east-1.db")}
	a := startGen(t, portA, argsA)
	startGen(t, portB, cmdline.Generator{Region: "eu-west-1", LeaseStore: "sqlite:" + filepath.Join(dir, "eu-west-1.db")})

	c, err := idclient.New(idclient.Config{Endpoints: []string{a.url, fmt.Sprintf("http://127.0.0.1:%d", portB)},
		Batch: 100, LowWater: 50, ProbeEvery: 200 * time.Millisecond, CallTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	type got struct {
		id idcore.ID
		at time.Time
	}
	var mu sync.Mutex
	var ids []got
	var maxGap time.Duration
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		last := time.Now()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			id, err := c.Next(ctx)
			cancel()
			if err != nil {
				t.Errorf("Next: %v", err)
				return
			}
			now := time.Now()
			mu.Lock()
			ids = append(ids, got{id, now})
			maxGap = max(maxGap, now.Sub(last))
			mu.Unlock()
			last = now
			time.Sleep(200 * time.Microsecond) // the load's pace
		}
	})
	regionsSince := func(since time.Time) map[int]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[int]int{}
		for _, g := range ids {
			if g.at.After(since) {
				d, _ := c.Decode(g.id)
				out[d.Region]++
			}
		}
		return out
	}
	// flowing holds once n of the IDs taken after since came from region.
	flowing := func(since time.Time, region, n int) func() (bool, string) {
		return func() (bool, string) {
			r := regionsSince(since)
			return r[region] >= n, fmt.Sprintf("ids by region since %s: %v, want %d from region %d", since.Format(time.TimeOnly), r, n, region)
		}
	}
	testenv.Eventually(t, 10*time.Second, flowing(time.Time{}, 0, 1000))
	_ = a.Kill()
	killed := time.Now()
	// IDs taken from 500 ms after the kill on (the client's buffer of us-east-1's IDs is used up
	// well before) come from eu-west-1 only.
	testenv.Eventually(t, 10*time.Second, flowing(killed.Add(500*time.Millisecond), 2, 1000))
	if r := regionsSince(killed.Add(500 * time.Millisecond)); r[0] != 0 {
		t.Fatalf("after us-east-1 died the ids came from %v, want eu-west-1 (2) only", r)
	}
	startGen(t, portA, argsA)
	back := time.Now()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		return c.Active() == a.url, "the client did not return to us-east-1: still on " + c.Active()
	})
	returned := time.Now()
	testenv.Eventually(t, 10*time.Second, flowing(returned.Add(500*time.Millisecond), 0, 1000))
	close(stop)
	wg.Wait()
	if r := regionsSince(returned.Add(500 * time.Millisecond)); r[0] == 0 {
		t.Fatalf("after the return no ids came from us-east-1: %v", r)
	}
	all := make([]idcore.ID, len(ids))
	for i, g := range ids {
		all[i] = g.id
	}
	slices.Sort(all)
	dups := len(all) - len(slices.Compact(slices.Clone(all)))
	t.Logf("checked %d ids across the failover and return: %d duplicates; longest wait for an id %v; back on us-east-1 %v after its restart",
		len(all), dups, maxGap.Round(time.Millisecond), returned.Sub(back).Round(time.Millisecond))
	if dups != 0 {
		t.Fatalf("%d duplicate ids", dups)
	}
	if maxGap > 2*time.Second {
		t.Fatalf("the client stalled for %v", maxGap)
	}
}

// SIGTERM during load: every request the generator accepted gets its full answer, then it stops
// issuing and releases its lease, so the number is claimable at once.
func TestShutdownUnderLoad(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "leases.db")
	g := startGen(t, testenv.FreePort(t), cmdline.Generator{Region: "us-east-1", Range: "7-7", LeaseStore: "sqlite:" + db})
	var served, refused, broken atomic.Int64
	var mu sync.Mutex
	var all []idcore.ID
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			hc := &http.Client{Timeout: 10 * time.Second}
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := hc.Post(g.url+"/v1/ids:batch", "application/json", strings.NewReader(`{"count":100}`))
				if err != nil {
					// Not accepted: connection refused or closed before a request was read. Retry
					// at a calm pace.
					refused.Add(1)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case err != nil:
					broken.Add(1)
				case resp.StatusCode == 200:
					var b struct {
						IDs []idcore.ID `json:"ids"`
					}
					if json.Unmarshal(body, &b) != nil || len(b.IDs) != 100 {
						broken.Add(1)
						continue
					}
					served.Add(1)
					mu.Lock()
					all = append(all, b.IDs...)
					mu.Unlock()
				case resp.StatusCode == 503:
					refused.Add(1)
				default:
					broken.Add(1)
				}
			}
		})
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		return served.Load() >= 50, fmt.Sprintf("%d batches served before the SIGTERM, want 50", served.Load())
	})
	if err := g.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the generator did not exit within 10 s of SIGTERM")
	}
	exited := time.Now()
	// Requests after the exit are refused, none broken.
	refusedAtExit := refused.Load()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		return refused.Load() >= refusedAtExit+8, fmt.Sprintf("%d requests refused since the exit, want 8", refused.Load()-refusedAtExit)
	})
	close(stop)
	wg.Wait()
	t.Logf("%d batches served, %d refused (not accepted), %d broken", served.Load(), refused.Load(), broken.Load())
	if broken.Load() != 0 || served.Load() == 0 {
		t.Fatalf("%d accepted requests lost their answer", broken.Load())
	}
	slices.Sort(all)
	if n := len(all) - len(slices.Compact(slices.Clone(all))); n != 0 {
		t.Fatalf("%d duplicates", n)
	}
	// The lease is released: number 7 is claimable at once, above every ID the generator made.
	st, err := sqlitelease.Open(context.Background(), db, lease.TableV2)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	row, err := st.Get(context.Background(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if row.ExpiryUnixMs > exited.UnixMilli() {
		t.Fatalf("lease expiry %d is after the exit at %d: not released", row.ExpiryUnixMs, exited.UnixMilli())
	}
	if row.ExpiryUnixMs < slices.Max(all).Time().UnixMilli() {
		t.Fatalf("released expiry %d is below the last id's time %d", row.ExpiryUnixMs, slices.Max(all).Time().UnixMilli())
	}
	now := time.Now().UnixMilli()
	if _, err := st.Claim(context.Background(), 7, "next", now, now+3000); err != nil {
		t.Fatalf("claim right after the shutdown: %v", err)
	}
}
