// Command chaos runs real generator and idproc processes on shared, small ranges of machine
// numbers, on a dynalite lease store and on a SQLite lease file, asks each for IDs without pause,
// and injects faults on a random schedule drawn from a seed: SIGSTOP shorter and longer than the
// lease, kill -9 and restart, the store frozen shorter and longer than lease minus margin, the
// store killed -9 and restarted, quarantine and lift, and the restore fence. At the end it checks
// that no ID was returned twice and that each process's IDs strictly increased, prints a table by
// fault, and exits 1 on the first duplicate, naming both processes and the ID.
//
//	go run ./tools/chaos --duration 5m [--seed N]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
)

// The processes' lease settings.
const (
	leaseLen = 3 * time.Second
	renew    = 500 * time.Millisecond
	margin   = 500 * time.Millisecond
)

// group is the processes sharing one lease store.
type group struct {
	name     string // dynamo or sqlite
	storeArg string // sqlite:PATH or dynamodb:URL
	store    lease.Store
	machines []int // the numbers its processes share
	procs    []*proc
}

// fault is one scheduled injection. Drawn from the seed: the same seed gives the same list.
type fault struct {
	at     time.Duration // from the start of the run
	kind   string
	target int // a process index, or a group index for quarantine-lift and fence-restore
	dur    time.Duration
	pick   int // quarantine-lift: an index into the group's machine numbers
}

func main() {
	duration := flag.Duration("duration", 5*time.Minute, "how long to run")
	seed := flag.Uint64("seed", 0, "fault schedule seed (0: from the clock); the same seed replays the same schedule")
	gens := flag.Int("generators", 4, "generators per group (sharing generators-1 machine numbers)")
	idprocs := flag.Int("idprocs", 3, "idproc processes per group (sharing idprocs-1 machine numbers)")
	keep := flag.Bool("keep", false, "keep the work folder (logs, stores) even when the run passes")
	flag.Parse()
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	code, err := run(*duration, *seed, max(*gens, 2), max(*idprocs, 2), *keep)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run(duration time.Duration, seed uint64, gens, idprocs int, keep bool) (code int, err error) {
	fmt.Printf("chaos: seed %d (replay: go run ./tools/chaos --seed %d --duration %s)\n", seed, seed, duration)
	root, err := repoRoot()
	if err != nil {
		return 0, err
	}
	work, err := os.MkdirTemp("", "idgen-chaos-")
	if err != nil {
		return 0, err
	}
	defer func() {
		if code == 0 && err == nil && !keep {
			os.RemoveAll(work)
		} else {
			fmt.Printf("chaos: logs and stores kept in %s\n", work)
		}
	}()
	bins := filepath.Join(work, "bin")
	for name, pkg := range map[string]string{"generator": "./services/generator/cmd/generator", "idproc": "./libs/idcore/embedded/internal/idproc"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bins, name), pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("build %s: %v\n%s", name, err, out)
		}
	}
	ctx := context.Background()

	// The stores.
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	dlog, err := os.Create(filepath.Join(work, "dynalite.log"))
	if err != nil {
		return 0, err
	}
	defer dlog.Close()
	dyn := &dynalite{root: root, dir: filepath.Join(work, "dynalite"), port: port, log: dlog,
		endpoint: fmt.Sprintf("http://127.0.0.1:%d", port)}
	if err := os.MkdirAll(dyn.dir, 0o755); err != nil {
		return 0, err
	}
	if err := dyn.start(); err != nil {
		return 0, err
	}
	defer dyn.kill()
	db, err := dynamolease.NewClient(ctx, dyn.endpoint)
	if err != nil {
		return 0, err
	}
	if err := dynamolease.CreateTables(ctx, db, lease.TableV2, lease.TableHistory); err != nil {
		return 0, err
	}
	sqlPath := filepath.Join(work, "leases.db")
	sq, err := sqlitelease.Open(ctx, sqlPath, lease.TableV2)
	if err != nil {
		return 0, err
	}
	defer sq.Close()

	// The processes: per group, gens generators on gens-1 numbers and idprocs idprocs on
	// idprocs-1 numbers; the groups' numbers are disjoint (their stores are independent).
	rec := &recorder{}
	groups := []*group{
		{name: "dynamo", storeArg: "dynamodb:" + dyn.endpoint, store: dynamolease.New(db, lease.TableV2, lease.TableHistory)},
		{name: "sqlite", storeArg: "sqlite:" + sqlPath, store: sq},
	}
	var procs []*proc
	for gi, g := range groups {
		gLo := gi * (gens - 1)
		gHi := gLo + gens - 2
		pLo := 64 + gi*(idprocs-1)
		pHi := pLo + idprocs - 2
		for m := gLo; m <= gHi; m++ {
			g.machines = append(g.machines, m)
		}
		for m := pLo; m <= pHi; m++ {
			g.machines = append(g.machines, m)
		}
		for i := range gens {
			gp, err := freePort()
			if err != nil {
				return 0, err
			}
			p := &proc{slot: fmt.Sprintf("%s/gen-%d", g.name, i+1), kind: "generator", bin: filepath.Join(bins, "generator"),
				url: fmt.Sprintf("http://127.0.0.1:%d", gp), logs: work, rec: rec,
				args: []string{"--insecure-dev", "--clock-check", "warn", "--listen", fmt.Sprintf("127.0.0.1:%d", gp),
					"--lease-store", g.storeArg, "--range", fmt.Sprintf("%d-%d", gLo, gHi),
					"--lease", leaseLen.String(), "--renew", renew.String(), "--fence-margin", margin.String(), "--drain", "2s"}}
			g.procs = append(g.procs, p)
		}
		for i := range idprocs {
			p := &proc{slot: fmt.Sprintf("%s/idproc-%d", g.name, i+1), kind: "idproc", bin: filepath.Join(bins, "idproc"),
				logs: work, rec: rec,
				args: []string{"--store", g.storeArg, "--range", fmt.Sprintf("%d-%d", pLo, pHi), "--batch", "5",
					"--lease", leaseLen.String(), "--renew", renew.String(), "--margin", margin.String()}}
			g.procs = append(g.procs, p)
		}
		procs = append(procs, g.procs...)
	}
	for _, p := range procs {
		if err := p.start(); err != nil {
			return 0, err
		}
	}
	defer func() {
		for _, p := range procs {
			p.signal(syscall.SIGCONT)
			p.signal(syscall.SIGKILL)
		}
	}()

	// Load.
	start := time.Now()
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	for _, p := range procs {
		if p.kind == "generator" {
			wg.Go(func() { p.load(loadCtx, 20) })
		}
	}

	// Faults, one at a time, until the duration ends or SIGINT/SIGTERM.
	sigCtx, stopSig := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stopSig()
	schedule := plan(seed, duration, len(procs), len(groups))
	windows := []window{{kind: "none", start: start}}
	for _, f := range schedule {
		sleep(sigCtx, time.Until(start.Add(f.at)))
		if sigCtx.Err() != nil {
			break
		}
		at := time.Now()
		windows = append(windows, window{kind: f.kind, start: at})
		desc, ferr := inject(sigCtx, f, procs, groups, dyn)
		fmt.Printf("t+%-7s %-16s %s\n", at.Sub(start).Round(100*time.Millisecond), f.kind, desc)
		if ferr != nil {
			return 0, fmt.Errorf("%s: %w", f.kind, ferr)
		}
	}
	sleep(sigCtx, time.Until(start.Add(duration)))

	// Stop: load first, then every process gracefully.
	stopLoad()
	wg.Wait()
	var sw sync.WaitGroup
	for _, p := range procs {
		sw.Go(p.stop)
	}
	sw.Wait()

	rep := check(rec.series(), windows)
	fmt.Println()
	rep.print(os.Stdout)
	fmt.Printf("\n%d IDs from %d process incarnations over %s, seed %d\n", rep.total, len(rec.series()), time.Since(start).Round(time.Second), seed)
	for _, d := range rep.disorders {
		fmt.Printf("chaos: IDs not strictly increasing: %s\n", d)
	}
	if len(rep.dups) > 0 {
		d := rep.dups[0]
		fmt.Printf("chaos: DUPLICATE id %d returned by %s and by %s (%d duplicates in all)\n", d.id, d.a, d.b, len(rep.dups))
		return 1, nil
	}
	if len(rep.disorders) > 0 || rep.total == 0 {
		return 1, nil
	}
	fmt.Println("chaos: no duplicates")
	return 0, nil
}

// plan draws the fault schedule from seed: a pause of 1.5–4.5 s, then a fault, until 5 s before
// the end. The kinds come in shuffled rounds of all eight, so a short run still has each.
func plan(seed uint64, duration time.Duration, nprocs, ngroups int) []fault {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo))) }
	kinds := faultKinds[1:]
	var out []fault
	var bag []int // the kinds in a shuffled order, refilled when empty, so every kind recurs
	for t := 3 * time.Second; ; {
		t += between(1500*time.Millisecond, 4500*time.Millisecond)
		if len(bag) == 0 {
			bag = r.Perm(len(kinds))
		}
		f := fault{at: t, kind: kinds[bag[0]], target: r.IntN(nprocs)}
		bag = bag[1:]
		switch f.kind {
		case "sigstop-short":
			f.dur = between(500*time.Millisecond, leaseLen-500*time.Millisecond)
		case "sigstop-long":
			f.dur = between(leaseLen+time.Second, 2*leaseLen)
		case "kill9-restart":
			f.dur = between(0, 2*time.Second)
		case "store-stop-short":
			f.dur = between(300*time.Millisecond, leaseLen-margin-500*time.Millisecond)
		case "store-stop-long":
			f.dur = between(leaseLen-margin+500*time.Millisecond, 2*leaseLen)
		case "store-kill9":
			f.dur = between(500*time.Millisecond, 2*leaseLen)
		case "quarantine-lift":
			f.target = r.IntN(ngroups)
			f.pick = r.IntN(1 << 20)
			f.dur = between(time.Second, leaseLen+time.Second)
		case "fence-restore":
			f.target = r.IntN(ngroups)
		}
		if t+f.dur > duration-5*time.Second {
			return out
		}
		out = append(out, f)
		t += f.dur
	}
}

// inject carries out one fault and returns what it did.
func inject(ctx context.Context, f fault, procs []*proc, groups []*group, dyn *dynalite) (string, error) {
	switch f.kind {
	case "sigstop-short", "sigstop-long":
		p := procs[f.target]
		p.signal(syscall.SIGSTOP)
		sleep(ctx, f.dur)
		p.signal(syscall.SIGCONT)
		return fmt.Sprintf("%s frozen %s", p.slot, f.dur.Round(time.Millisecond)), nil
	case "kill9-restart":
		p := procs[f.target]
		return fmt.Sprintf("%s killed, restarted after %s", p.slot, f.dur.Round(time.Millisecond)), p.killRestart(f.dur)
	case "store-stop-short", "store-stop-long":
		dyn.signal(syscall.SIGSTOP)
		sleep(ctx, f.dur)
		dyn.signal(syscall.SIGCONT)
		return fmt.Sprintf("dynalite frozen %s", f.dur.Round(time.Millisecond)), nil
	case "store-kill9":
		dyn.kill()
		sleep(ctx, f.dur)
		return fmt.Sprintf("dynalite killed, restarted after %s", f.dur.Round(time.Millisecond)), dyn.start()
	case "quarantine-lift":
		g := groups[f.target]
		m := g.machines[f.pick%len(g.machines)]
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		r, err := retry(qctx, func() (lease.Row, error) { return g.store.Quarantine(qctx, m) })
		if errors.Is(err, lease.ErrNotFound) {
			return fmt.Sprintf("%s number %d never claimed: skipped", g.name, m), nil
		}
		if err != nil {
			return "", err
		}
		now := time.Now()
		_ = g.store.AppendHistory(qctx, lease.Event{Machine: m, AtUnixMs: now.UnixMilli(), Kind: "quarantine", Holder: r.Holder, Epoch: r.Epoch, ExpiryUnixMs: r.ExpiryUnixMs})
		sleep(ctx, f.dur)
		lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
		defer lcancel()
		r, err = retry(lctx, func() (lease.Row, error) {
			return g.store.Lift(lctx, m, lease.LiftExpiry(time.Now(), leaseLen, margin))
		})
		if err != nil {
			return "", fmt.Errorf("lift %s %d: %w", g.name, m, err)
		}
		_ = g.store.AppendHistory(lctx, lease.Event{Machine: m, AtUnixMs: time.Now().UnixMilli(), Kind: "lift", Holder: r.Holder, Epoch: r.Epoch, ExpiryUnixMs: r.ExpiryUnixMs})
		return fmt.Sprintf("%s number %d quarantined %s, lifted", g.name, m, f.dur.Round(time.Millisecond)), nil
	case "fence-restore":
		g := groups[f.target]
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		n, err := retry(fctx, func() (int, error) { return lease.FenceRestore(fctx, g.store, time.Now(), leaseLen, margin) })
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s: %d lease rows fenced", g.name, n), nil
	}
	return "", fmt.Errorf("unknown fault %q", f.kind)
}

// retry calls op until it succeeds, fails with a lease error, or ctx ends: the store may be
// coming back from a fault.
func retry[T any](ctx context.Context, op func() (T, error)) (T, error) {
	for {
		v, err := op()
		if err == nil || errors.Is(err, lease.ErrNotFound) || errors.Is(err, lease.ErrLost) || ctx.Err() != nil {
			return v, err
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

// repoRoot is the nearest folder above the working directory holding go.work and
// package-lock.json.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		_, e1 := os.Stat(filepath.Join(dir, "go.work"))
		_, e2 := os.Stat(filepath.Join(dir, "package-lock.json"))
		if e1 == nil && e2 == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the idgen repository (no go.work above the working directory)")
		}
		dir = parent
	}
}
