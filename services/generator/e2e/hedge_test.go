package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/localstack/cmdline"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/prometheus/client_golang/prometheus"
)

// stallUnderSIGSTOP runs two generator processes (us-east-1 local, eu-west-1 its peer) and a
// client with the default call timeout taking IDs as fast as it can, freezes the local one with
// SIGSTOP for frozenFor, and returns the longest Next of the frozen period and the peer's slowest
// answer to a batch meanwhile. It checks that no ID repeats, that IDs came from the peer while
// the local generator was frozen, that the client moved to the peer past its call timeout and
// is back on the local one after SIGCONT, and returns the hedged calls the client counted.
func stallUnderSIGSTOP(t *testing.T, cfg idclient.Config, frozenFor time.Duration) (longest, peerSlowest time.Duration, hedges float64) {
	dir := t.TempDir()
	local := startGen(t, testenv.FreePort(t), cmdline.Generator{Region: "us-east-1", LeaseStore: "sqlite:" + filepath.Join(dir, "us-east-1.db")})
	peer := startGen(t, testenv.FreePort(t), cmdline.Generator{Region: "eu-west-1", LeaseStore: "sqlite:" + filepath.Join(dir, "eu-west-1.db")})
	cfg.Endpoints = []string{local.url, peer.url}
	c, err := idclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	type took struct {
		id       idcore.ID
		at, from time.Time
	}
	var mu sync.Mutex
	var got []took
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			began := time.Now()
			id, err := c.Next(ctx)
			cancel()
			if err != nil {
				t.Errorf("Next: %v", err)
				return
			}
			mu.Lock()
			got = append(got, took{id, time.Now(), began})
			mu.Unlock()
		}
	})
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer halt()
	fromRegion := func(since time.Time, region int) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, g := range got {
			if d, _ := c.Decode(g.id); g.from.After(since) && d.Region == region {
				n++
			}
		}
		return n
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		n := fromRegion(time.Time{}, 0)
		return n >= 5000, fmt.Sprintf("%d IDs from us-east-1, want 5000 before the SIGSTOP", n)
	})

	// The peer's own latency, measured beside the client (the same protocol, a batch of the same
	// size) while the local generator is frozen.
	direct := idgenv1connect.NewIdServiceClient(idclient.H2CClient(), peer.url)
	probeStop := make(chan struct{})
	var probes sync.WaitGroup
	probes.Go(func() {
		for {
			select {
			case <-probeStop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			began := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := direct.GenerateBatch(ctx, connect.NewRequest(&idgenv1.GenerateBatchRequest{Count: int32(cfg.Batch)}))
			cancel()
			if err != nil {
				t.Errorf("a batch from the peer: %v", err)
				return
			}
			mu.Lock()
			peerSlowest = max(peerSlowest, time.Since(began))
			mu.Unlock()
		}
	})

	if err := local.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	time.Sleep(frozenFor)
	// Past the call timeout the client has moved to the peer, as without hedging: the active
	// endpoint tells where the client stands, whatever answered first meanwhile.
	if a := c.Active(); a != peer.url {
		t.Errorf("active endpoint %s after %v of SIGSTOP, want the peer %s", a, frozenFor, peer.url)
	}
	if err := local.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	thawed := time.Now()
	close(probeStop)
	probes.Wait()

	mu.Lock()
	calls := 0
	for _, g := range got {
		// Every Next that began while the local generator was frozen, and the one waiting when
		// the SIGSTOP came.
		if g.at.After(frozen) && g.from.Before(thawed) {
			longest = max(longest, g.at.Sub(g.from))
			calls++
		}
	}
	mu.Unlock()
	if n := fromRegion(frozen, 2); n == 0 {
		t.Fatal("no ID came from the peer while the local generator was frozen")
	}
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		return c.Active() == local.url && fromRegion(time.Now().Add(-time.Second), 0) > 1000,
			"not back on us-east-1 after SIGCONT: active " + c.Active()
	})
	halt()
	all := make([]idcore.ID, len(got))
	for i, g := range got {
		all[i] = g.id
	}
	slices.Sort(all)
	if d := len(all) - len(slices.Compact(slices.Clone(all))); d != 0 {
		t.Fatalf("%d duplicate IDs among %d", d, len(all))
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c.Collectors()...)
	gathered := testenv.Gather(t, reg)
	m := map[string]float64{}
	for _, name := range []string{"idgen_client_hedges_total", "idgen_client_failovers_total"} {
		m[name] = gathered.Sum(name, nil)
	}
	t.Logf("%d IDs, none twice; %d calls to Next during the %v SIGSTOP of us-east-1: the longest took %v; the peer's slowest batch meanwhile %v; %v hedged calls, %v moves between endpoints",
		len(all), calls, frozenFor, longest.Round(time.Millisecond), peerSlowest.Round(time.Millisecond), m["idgen_client_hedges_total"], m["idgen_client_failovers_total"])
	if m["idgen_client_failovers_total"] < 2 {
		t.Errorf("%v moves between endpoints counted, want 2 at least (to the peer and back)", m["idgen_client_failovers_total"])
	}
	return longest, peerSlowest, m["idgen_client_hedges_total"]
}

// TestHedgeUnderSIGSTOP: the local generator frozen with SIGSTOP answers nothing and refuses
// nothing. Without hedging the client's callers wait for the whole call timeout (2 s by default)
// before it moves to the peer; with hedging (the default, 50 ms) no Next waits longer than the
// hedge delay and the peer's latency, and the client still moves back once the local generator
// runs again.
func TestHedgeUnderSIGSTOP(t *testing.T) {
	const frozenFor = 3 * time.Second // past the default 2 s call timeout
	cfg := idclient.Config{Batch: 100, LowWater: 50, ProbeEvery: 200 * time.Millisecond}
	t.Run("hedging off", func(t *testing.T) {
		off := cfg
		off.HedgeAfter = -1
		longest, _, hedges := stallUnderSIGSTOP(t, off, frozenFor)
		if hedges != 0 {
			t.Errorf("%v hedged calls with hedging off", hedges)
		}
		// The measure sees the stall hedging removes: the call timeout, waited out.
		if longest < 1500*time.Millisecond {
			t.Fatalf("the longest Next without hedging took %v; a frozen local generator should stall it for about the 2 s call timeout", longest)
		}
	})
	t.Run("hedging on", func(t *testing.T) {
		const hedgeAfter = 50 * time.Millisecond // the default
		// What a shared 2-core machine running this under -race adds: goroutine wake-ups, the
		// client's own decoding of a batch.
		const slack = 100 * time.Millisecond
		longest, peerSlowest, hedges := stallUnderSIGSTOP(t, cfg, frozenFor)
		if hedges == 0 {
			t.Error("no hedged call counted")
		}
		if bound := hedgeAfter + peerSlowest + slack; longest > bound {
			t.Fatalf("the longest Next took %v with the local generator frozen; want at most the hedge delay %v + the peer's slowest batch %v + %v",
				longest, hedgeAfter, peerSlowest, slack)
		}
	})
}
