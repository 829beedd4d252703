// Command chaos runs real generator and embedded-node processes on shared, small ranges of
// machine numbers, on a dynalite lease store and on a SQLite lease file, asks each for IDs without
// pause, and injects faults on a random schedule drawn from a seed: SIGSTOP shorter and longer
// than the lease, kill -9 and restart, the store frozen shorter than the outage bound (lease −
// margin − renew − retry cadence) and longer than lease minus margin, the store killed -9 and restarted, quarantine and lift and the restore fence through
// idgenctl (which reads the lease and margin from the table's rules), a restore from an old
// backup (the first taken before the first claim) followed by the restore fence, a process whose
// lease differs from the table's rules (it must refuse to start), and clock offsets within the
// bound, beyond it (seen by the clock discipline) and stepped beyond it unseen. It checks
// every ID: none returned twice, each process's strictly increasing, none at or past the fence
// its node reported, none from a clock beyond the bound that the discipline reported; prints a
// table by fault, and exits 1 on the first duplicate, naming both processes and the ID.
//
//	go run ./tools/chaos --duration 5m [--seed N]
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
)

// The processes' lease settings, and the clock bound of the clock discipline (the largest
// estimated error and forward jump a generator accepts).
const (
	leaseLen   = 3 * time.Second
	renew      = 500 * time.Millisecond
	margin     = 500 * time.Millisecond
	clockBound = 5 * time.Millisecond
	// outageBound: a store outage shorter than this is invisible wherever it starts
	// (docs/leases.md#store-outages): lease − margin − renew − min(renew, lease.RetryCadence).
	outageBound = leaseLen - margin - renew - min(renew, lease.RetryCadence)
)

// group is the processes sharing one lease store.
type group struct {
	name     string // dynamo or sqlite
	storeArg string // sqlite:PATH or dynamodb:URL
	store    lease.Store
	machines []int // the numbers its processes share
	procs    []*proc

	backup   string // the last backup: a copy of the SQLite file or of dynalite's data folder
	backedUp time.Time
}

// fault is one scheduled injection. Drawn from the seed: the same seed gives the same list.
type fault struct {
	at     time.Duration // from the start of the run
	kind   string
	target int // a process index, or a group index for quarantine-lift, fence-restore, restore-backup
	dur    time.Duration
	pick   int           // quarantine-lift: an index into the group's machine numbers
	offset time.Duration // clock faults
}

// env is what the faults act on.
type env struct {
	work    string
	procs   []*proc
	groups  []*group
	dyn     *dynalite
	db      *dynamodb.Client
	ctl     []string // idgenctl and the flags every call passes
	yes     bool     // idgenctl asks for --yes on quarantine, lift and fence-restore
	hidden  []hiddenStep
	hiddenM sync.Mutex

	ctlFailures []string // idgenctl commands that failed
	bins        string   // the built binaries
}

// ctlError is an idgenctl command that failed.
type ctlError struct{ msg string }

func (c ctlError) Error() string { return c.msg }

func main() {
	duration := flag.Duration("duration", 5*time.Minute, "how long to run")
	seed := flag.Uint64("seed", 0, "fault schedule seed (0: from the clock); the same seed replays the same schedule")
	gens := flag.Int("generators", 4, "generators per group (sharing generators-1 machine numbers)")
	nodes := flag.Int("nodes", 3, "embedded nodes per group (sharing nodes-1 machine numbers)")
	batch := flag.Int("batch", 1000, "IDs per request or node batch (the generator's largest batch is 1000)")
	genPause := flag.Duration("generator-pause", 2*time.Millisecond, "pause after each generator answer")
	nodePause := flag.Duration("node-pause", 5*time.Millisecond, "pause after each node batch")
	keep := flag.Bool("keep", false, "keep the work folder (logs, stores) even when the run passes")
	flag.Parse()
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	code, err := run(*duration, *seed, max(*gens, 2), max(*nodes, 2), max(*batch, 1), *genPause, *nodePause, *keep)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run(duration time.Duration, seed uint64, gens, nodes, batch int, genPause, nodePause time.Duration, keep bool) (code int, err error) {
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
	// The generator and the node are built with the chaos tag, which adds the clock option
	// (--chaos-clock-file); idgenctl as it ships.
	bins := filepath.Join(work, "bin")
	for _, b := range []struct{ name, pkg, tags string }{
		{"generator", "./services/generator/cmd/generator", "chaos"},
		{"node", "./libs/idcore/embedded/idnode", "chaos"},
		{"idgenctl", "./tools/idgenctl", ""},
	} {
		args := []string{"build", "-o", filepath.Join(bins, b.name)}
		if b.tags != "" {
			args = append(args, "-tags", b.tags)
		}
		cmd := exec.Command("go", append(args, b.pkg)...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("build %s: %v\n%s", b.name, err, out)
		}
	}
	ctx := context.Background()
	e := &env{work: work}
	e.ctl = []string{filepath.Join(bins, "idgenctl")}
	e.yes = ctlHasYes(e.ctl[0])

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
	e.dyn = &dynalite{root: root, dir: filepath.Join(work, "dynalite"), port: port, log: dlog,
		endpoint: fmt.Sprintf("http://127.0.0.1:%d", port)}
	if err := os.MkdirAll(e.dyn.dir, 0o755); err != nil {
		return 0, err
	}
	if err := e.dyn.start(); err != nil {
		return 0, err
	}
	defer e.dyn.kill()
	if e.db, err = dynamolease.NewClient(ctx, e.dyn.endpoint); err != nil {
		return 0, err
	}
	if err := dynamolease.CreateTables(ctx, e.db, lease.TableV2, lease.TableHistory); err != nil {
		return 0, err
	}
	sqlPath := filepath.Join(work, "leases.db")
	sq, err := sqlitelease.Open(ctx, sqlPath, lease.TableV2)
	if err != nil {
		return 0, err
	}
	sq.Close()
	if err := os.MkdirAll(filepath.Join(work, "clock"), 0o755); err != nil {
		return 0, err
	}
	// The SQLite file's rules are written as the bootstrap writes them (idgenctl leases init);
	// dynalite's table gets them from its first holder.
	if out, err := exec.Command(e.ctl[0], "leases", "init", "--lease", leaseLen.String(), "--margin", margin.String(),
		"--lease-store", "sqlite:"+sqlPath, "--region", "us-east-1").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("idgenctl leases init: %v: %s", err, out)
	}

	// The processes: per group, gens generators on gens-1 numbers and nodes nodes on nodes-1
	// numbers; the groups' numbers are disjoint (their stores are independent).
	rec := &recorder{}
	e.groups = []*group{
		{name: "dynamo", storeArg: "dynamodb:" + e.dyn.endpoint, store: dynamolease.New(e.db, lease.TableV2, lease.TableHistory)},
		{name: "sqlite", storeArg: "sqlite:" + sqlPath},
	}
	for gi, g := range e.groups {
		gLo := gi * (gens - 1)
		gHi := gLo + gens - 2
		pLo := 64 + gi*(nodes-1)
		pHi := pLo + nodes - 2
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
			slot := fmt.Sprintf("%s/gen-%d", g.name, i+1)
			p := &proc{slot: slot, kind: "generator", bin: filepath.Join(bins, "generator"),
				url: fmt.Sprintf("http://127.0.0.1:%d", gp), logs: work, rec: rec, clock: clockFile(work, slot),
				args: []string{"--insecure-dev", "--clock-check", "strict", "--listen", fmt.Sprintf("127.0.0.1:%d", gp),
					"--lease-store", g.storeArg, "--range", fmt.Sprintf("%d-%d", gLo, gHi),
					"--lease", leaseLen.String(), "--renew", renew.String(), "--fence-margin", margin.String(), "--drain", "2s"}}
			p.args = append(p.args, "--chaos-clock-file", p.clock)
			g.procs = append(g.procs, p)
		}
		for i := range nodes {
			slot := fmt.Sprintf("%s/node-%d", g.name, i+1)
			p := &proc{slot: slot, kind: "node", bin: filepath.Join(bins, "node"), logs: work, rec: rec, clock: clockFile(work, slot),
				args: []string{"--store", g.storeArg, "--range", fmt.Sprintf("%d-%d", pLo, pHi), "--batch", fmt.Sprint(batch),
					"--pause", nodePause.String(), "--lease", leaseLen.String(), "--renew", renew.String(), "--margin", margin.String()}}
			p.args = append(p.args, "--chaos-clock-file", p.clock)
			g.procs = append(g.procs, p)
		}
		e.procs = append(e.procs, g.procs...)
	}
	// The first backups, before any process starts: before the first claim, so dynalite's has no
	// metadata row at all (its restore must not pass for a new table: the lease history holds the
	// table's claims by then), and SQLite's only the rules.
	for _, g := range e.groups {
		if err := e.takeBackup(ctx, g); err != nil {
			return 0, err
		}
		fmt.Printf("t+0s      %-17s %s (before the first claim)\n", "backup", g.name)
	}
	e.bins = bins
	for _, p := range e.procs {
		if err := p.setClock(0, 0); err != nil {
			return 0, err
		}
		if err := p.start(); err != nil {
			return 0, err
		}
	}
	defer func() {
		for _, p := range e.procs {
			p.signal(syscall.SIGCONT)
			p.signal(syscall.SIGKILL)
		}
	}()

	// Load.
	start := time.Now()
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	for _, p := range e.procs {
		if p.kind == "generator" {
			wg.Go(func() { p.load(loadCtx, min(batch, 1000), genPause) })
		}
	}

	// Faults, one at a time, until the duration ends, SIGINT/SIGTERM, or a duplicate (checked
	// every 10 s while the run goes on).
	sigCtx, stopSig := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stopSig()
	runCtx, stopRun := context.WithCancel(sigCtx)
	defer stopRun()
	var early sync.WaitGroup
	early.Go(func() {
		for runCtx.Err() == nil {
			// Every 10 s, then every tenth of the time so far: a long soak's runs take a while
			// to sort.
			sleep(runCtx, max(10*time.Second, time.Since(start)/10))
			if dups, _, _ := dupCheck(rec.series()); len(dups) > 0 {
				fmt.Printf("chaos: DUPLICATE id %d returned by %s and by %s: stopping\n", dups[0].id, dups[0].a, dups[0].b)
				stopRun()
			}
		}
	})
	schedule := plan(seed, duration, e.procs, len(e.groups))
	windows := []window{{kind: "none", start: start}}
	for _, f := range schedule {
		sleep(runCtx, time.Until(start.Add(f.at)))
		if runCtx.Err() != nil {
			break
		}
		at := time.Now()
		windows = append(windows, window{kind: f.kind, start: at})
		desc, ferr := e.inject(runCtx, f)
		var ce ctlError
		if errors.As(ferr, &ce) {
			// An operator command that fails under the faults is reported, and the run goes on.
			desc, ferr = "FAILED: "+ce.Error(), nil
			e.ctlFailures = append(e.ctlFailures, fmt.Sprintf("t+%s %s: %s", at.Sub(start).Round(100*time.Millisecond), f.kind, ce.Error()))
		}
		fmt.Printf("t+%-7s %-17s %s\n", at.Sub(start).Round(100*time.Millisecond), f.kind, desc)
		if ferr != nil {
			return 0, fmt.Errorf("%s: %w", f.kind, ferr)
		}
	}
	sleep(runCtx, time.Until(start.Add(duration)))
	stopRun()
	early.Wait()

	// Stop: load first, then every process gracefully.
	stopLoad()
	wg.Wait()
	var sw sync.WaitGroup
	for _, p := range e.procs {
		sw.Go(p.stop)
	}
	sw.Wait()
	elapsed := time.Since(start)

	rep := check(rec.series(), windows, e.hidden)
	fmt.Println()
	rep.print(os.Stdout)
	fmt.Printf("\n%d IDs from %d process incarnations over %s (%.2f M IDs/min), seed %d\n", rep.total, len(rec.series()),
		elapsed.Round(time.Second), float64(rep.total)/elapsed.Minutes()/1e6, seed)
	var fromGen, fromNode int
	for _, s := range rec.series() {
		if strings.Contains(s.slot, "/gen-") {
			fromGen += s.n
		} else {
			fromNode += s.n
		}
	}
	fenceChecks := 0
	for _, s := range rec.series() {
		s.mu.Lock()
		fenceChecks += s.fenceChecks
		s.mu.Unlock()
	}
	fmt.Printf("%d from generators (HTTP batches), %d from embedded nodes; %d batches checked against their holder's fence\n", fromGen, fromNode, fenceChecks)
	for _, c := range e.ctlFailures {
		fmt.Printf("chaos: operator command failed (reported, not a broken promise): %s\n", c)
	}
	for _, d := range rep.disorders {
		fmt.Printf("chaos: IDs not strictly increasing: %s\n", d)
	}
	for _, d := range rep.fences {
		fmt.Printf("chaos: ID past its fence: %s\n", d)
	}
	for _, d := range rep.offClock {
		fmt.Printf("chaos: IDs from a clock beyond the bound: %s\n", d)
	}
	if len(rep.dups) > 0 {
		d := rep.dups[0]
		fmt.Printf("chaos: DUPLICATE id %d returned by %s and by %s (%d IDs returned twice in all)\n", d.id, d.a, d.b, rep.dupIDs)
		return 1, nil
	}
	if rep.failed() {
		return 1, nil
	}
	fmt.Println("chaos: no duplicates")
	return 0, nil
}

// clockFile is the file a slot's clock offset and estimated error are written to.
func clockFile(work, slot string) string {
	return filepath.Join(work, "clock", strings.ReplaceAll(slot, "/", "_"))
}

// ctlHasYes reports whether idgenctl's quarantine, lift and fence-restore ask for --yes.
func ctlHasYes(bin string) bool {
	out, _ := exec.Command(bin, "leases", "quarantine", "--help").CombinedOutput()
	return strings.Contains(string(out), "--yes") || strings.Contains(string(out), "-yes ")
}

// plan draws the fault schedule from seed: a pause of 1.5–4.5 s, then a fault, until 5 s before
// the end. The kinds come in shuffled rounds of all of them, so a short run still has each.
func plan(seed uint64, duration time.Duration, procs []*proc, ngroups int) []fault {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo))) }
	sign := func(d time.Duration) time.Duration {
		if r.IntN(2) == 0 {
			return -d
		}
		return d
	}
	kinds := faultKinds[1:]
	var out []fault
	restores := 0 // restore-backup takes the groups in turn, dynalite's first: its first backup is from before the first claim
	var bag []int // the kinds in a shuffled order, refilled when empty, so every kind recurs
	for t := 3 * time.Second; ; {
		t += between(1500*time.Millisecond, 4500*time.Millisecond)
		if len(bag) == 0 {
			bag = r.Perm(len(kinds))
		}
		f := fault{at: t, kind: kinds[bag[0]], target: r.IntN(len(procs))}
		bag = bag[1:]
		switch f.kind {
		case "sigstop-short":
			f.dur = between(500*time.Millisecond, leaseLen-500*time.Millisecond)
		case "sigstop-long":
			f.dur = between(leaseLen+time.Second, 2*leaseLen)
		case "kill9-restart":
			f.dur = between(0, 2*time.Second)
		case "store-stop-short":
			f.dur = between(300*time.Millisecond, outageBound)
		case "store-stop-long":
			f.dur = between(leaseLen-margin+500*time.Millisecond, 2*leaseLen)
		case "store-kill9":
			f.dur = between(500*time.Millisecond, 2*leaseLen)
		case "quarantine-lift":
			f.target = r.IntN(ngroups)
			f.pick = r.IntN(1 << 20)
			f.dur = between(time.Second, leaseLen+time.Second)
		case "fence-restore", "restore-backup", "other-rules":
			f.target = r.IntN(ngroups)
			if f.kind == "restore-backup" {
				f.target = restores % ngroups
				restores++
			}
			f.dur = 2 * time.Second // the fence's own wait is not planned for
		case "clock-within":
			f.offset = sign(between(time.Millisecond, clockBound))
			f.dur = between(2*time.Second, 6*time.Second)
		case "clock-beyond", "clock-step-hidden":
			f.offset = sign(between(400*time.Millisecond, 2*time.Second))
			f.dur = between(2*time.Second, 5*time.Second)
		}
		if t+f.dur > duration-5*time.Second {
			return out
		}
		out = append(out, f)
		t += f.dur
	}
}

// inject carries out one fault and returns what it did.
func (e *env) inject(ctx context.Context, f fault) (string, error) {
	switch f.kind {
	case "sigstop-short", "sigstop-long":
		p := e.procs[f.target]
		p.signal(syscall.SIGSTOP)
		sleep(ctx, f.dur)
		p.signal(syscall.SIGCONT)
		return fmt.Sprintf("%s frozen %s", p.slot, f.dur.Round(time.Millisecond)), nil
	case "kill9-restart":
		p := e.procs[f.target]
		return fmt.Sprintf("%s killed, restarted after %s", p.slot, f.dur.Round(time.Millisecond)), p.killRestart(f.dur)
	case "store-stop-short", "store-stop-long":
		e.dyn.signal(syscall.SIGSTOP)
		sleep(ctx, f.dur)
		e.dyn.signal(syscall.SIGCONT)
		return fmt.Sprintf("dynalite frozen %s", f.dur.Round(time.Millisecond)), nil
	case "store-kill9":
		e.dyn.kill()
		sleep(ctx, f.dur)
		return fmt.Sprintf("dynalite killed, restarted after %s", f.dur.Round(time.Millisecond)), e.dyn.start()
	case "quarantine-lift":
		g := e.groups[f.target]
		m := g.machines[f.pick%len(g.machines)]
		out, err := e.idgenctl(ctx, g, "quarantine", fmt.Sprint(m))
		if strings.Contains(out, "never claimed") {
			return fmt.Sprintf("%s number %d never claimed: skipped", g.name, m), nil
		}
		if err != nil {
			return "", err
		}
		sleep(ctx, f.dur)
		if _, err := e.idgenctl(ctx, g, "lift", fmt.Sprint(m)); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s number %d quarantined %s, lifted (idgenctl)", g.name, m, f.dur.Round(time.Millisecond)), nil
	case "fence-restore":
		g := e.groups[f.target]
		out, err := e.idgenctl(ctx, g, "fence-restore")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s: idgenctl: %s", g.name, lastLine(out)), nil
	case "restore-backup":
		return e.restore(ctx, e.groups[f.target])
	case "other-rules":
		return e.otherRules(ctx, e.groups[f.target])
	case "clock-within":
		// An offset the discipline reports, within the bound: issuing goes on.
		p := e.procs[f.target]
		if err := p.setClock(f.offset, abs(f.offset)); err != nil {
			return "", err
		}
		sleep(ctx, f.dur)
		return fmt.Sprintf("%s clock %+v for %s", p.slot, f.offset, f.dur.Round(time.Millisecond)), p.setClock(0, 0)
	case "clock-beyond":
		// The discipline sees the error grow beyond the bound before the clock gets there (as
		// chrony's estimated error does), and until it is back: every ID made meanwhile is
		// refused. The error is reported first, for longer than a clock check interval.
		p := e.procs[f.target]
		est := abs(f.offset)
		if err := p.setClock(0, est); err != nil {
			return "", err
		}
		sleep(ctx, time.Second)
		if err := p.setClock(f.offset, est); err != nil {
			return "", err
		}
		sleep(ctx, f.dur)
		if err := p.setClock(0, est); err != nil {
			return "", err
		}
		sleep(ctx, time.Second)
		return fmt.Sprintf("%s clock %+v (estimated error reported) for %s", p.slot, f.offset, f.dur.Round(time.Millisecond)), p.setClock(0, 0)
	case "clock-step-hidden":
		// A step the discipline does not report: the generator's own checks (forward jump,
		// clock_backwards) are all that stand; IDs it makes from the stepped clock are counted
		// apart.
		p := e.procs[f.target]
		from := time.Now()
		if err := p.setClock(f.offset, 0); err != nil {
			return "", err
		}
		sleep(ctx, f.dur)
		err := p.setClock(0, 0)
		e.hiddenM.Lock()
		e.hidden = append(e.hidden, hiddenStep{slot: p.slot, start: from, end: time.Now().Add(time.Second)})
		e.hiddenM.Unlock()
		return fmt.Sprintf("%s clock stepped %+v unseen for %s", p.slot, f.offset, f.dur.Round(time.Millisecond)), err
	}
	return "", fmt.Errorf("unknown fault %q", f.kind)
}

// lastLine is the last line of idgenctl's output (its result).
func lastLine(out string) string {
	out = strings.TrimSpace(out)
	return out[strings.LastIndex(out, "\n")+1:]
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// idgenctl runs idgenctl leases OP ARGS… against g's store, as an operator would, retrying while
// the store is coming back from a fault; it returns the output.
func (e *env) idgenctl(ctx context.Context, g *group, op string, args ...string) (string, error) {
	argv := append([]string{"leases", op}, args...)
	// No lease or margin: lift and fence-restore read them from the table's rules.
	argv = append(argv, "--lease-store", g.storeArg, "--region", "us-east-1")
	if e.yes && op != "list" && op != "get" {
		argv = append(argv, "--yes")
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IDGEN_") {
			env = append(env, kv)
		}
	}
	for {
		cmd := exec.CommandContext(cctx, e.ctl[0], append(append([]string{}, e.ctl[1:]...), argv...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var xe *exec.ExitError
		if errors.As(err, &xe) && xe.ExitCode() == 2 { // usage: trying again will not help
			return string(out), ctlError{fmt.Sprintf("idgenctl %s: %v: %s", strings.Join(argv, " "), err, lastLine(string(out)))}
		}
		if err == nil || strings.Contains(string(out), "never claimed") || strings.Contains(string(out), "not quarantined") || cctx.Err() != nil {
			if err != nil {
				err = ctlError{fmt.Sprintf("idgenctl %s: %v: %s", strings.Join(argv, " "), err, lastLine(string(out)))}
			}
			return string(out), err
		}
		sleep(cctx, 300*time.Millisecond)
	}
}

// takeBackup backs g's store up: SQLite with VACUUM INTO (an online, consistent copy of the
// file), dynalite by copying its data folder while it is frozen. Backups are taken at any moment:
// before the first claim (the first ones), before a number's row, or after.
func (e *env) takeBackup(ctx context.Context, g *group) error {
	dst := filepath.Join(e.work, "backup-"+g.name)
	if g.name == "sqlite" {
		path := strings.TrimPrefix(g.storeArg, "sqlite:")
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			return err
		}
		defer db.Close()
		os.Remove(dst)
		if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
			return fmt.Errorf("backup %s: %w", path, err)
		}
	} else {
		if err := e.dyn.backup(dst); err != nil {
			return err
		}
	}
	g.backup, g.backedUp = dst, time.Now()
	return nil
}

// restore puts g's last backup back, as a restore does, then runs the restore fence with
// idgenctl, and takes the next backup.
//
// SQLite, one host's file: the group's processes are stopped (SIGTERM), the backup file is
// copied over the lease file, idgenctl leases fence-restore runs, and the processes start again.
// DynamoDB: the table is replaced by a new one (a new TableId) holding the backup's items, as a
// DynamoDB restore does; the items are read from the backup of dynalite's data folder through a
// second dynalite. The processes run on: holders see the TableId change, nobody claims from the
// restored table until the fence.
func (e *env) restore(ctx context.Context, g *group) (string, error) {
	if g.backup == "" {
		if err := e.takeBackup(ctx, g); err != nil {
			return fmt.Sprintf("%s: no backup yet (%v): skipped", g.name, err), nil
		}
		return fmt.Sprintf("%s: first backup taken; restored next time", g.name), nil
	}
	age := time.Since(g.backedUp).Round(100 * time.Millisecond)
	var desc string
	if g.name == "sqlite" {
		path := strings.TrimPrefix(g.storeArg, "sqlite:")
		var held []*proc
		var hw sync.WaitGroup
		for _, p := range g.procs {
			held = append(held, p)
			hw.Go(p.hold)
		}
		hw.Wait()
		for _, suffix := range []string{"-wal", "-shm"} {
			os.Remove(path + suffix)
		}
		if out, err := exec.Command("cp", g.backup, path).CombinedOutput(); err != nil {
			return "", fmt.Errorf("restore %s: %v: %s", path, err, out)
		}
		out, err := e.idgenctl(ctx, g, "fence-restore")
		for _, p := range held {
			if rerr := p.resume(); rerr != nil && err == nil {
				err = rerr
			}
		}
		if err != nil {
			return "", err
		}
		desc = fmt.Sprintf("sqlite: processes stopped, file restored from a backup %s old, started again; idgenctl: %s", age, lastLine(out))
	} else {
		items, err := e.readBackup(ctx, g.backup)
		if err != nil {
			return "", err
		}
		before, _ := g.store.TableID(ctx)
		// A DynamoDB restore is never seen half done: the table is absent, then holds every item
		// of the backup. Here the table is made anew and filled item by item, so the metadata row
		// goes in first (it names the old table: claims are refused from then on), and the
		// group's processes are frozen from the delete until it is in, so that none sees the
		// empty table in between, which would look like a new one.
		sort.SliceStable(items, func(i, j int) bool { return isMeta(items[i]) && !isMeta(items[j]) })
		for _, p := range g.procs {
			p.signal(syscall.SIGSTOP)
		}
		err = dynamolease.DeleteTable(ctx, e.db, lease.TableV2)
		if err == nil {
			err = dynamolease.CreateTables(ctx, e.db, lease.TableV2, lease.TableHistory)
		}
		if err == nil && len(items) > 0 && isMeta(items[0]) {
			_, err = e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: ptr(lease.TableV2), Item: items[0]})
			items = items[1:]
		}
		for _, p := range g.procs {
			p.signal(syscall.SIGCONT)
		}
		if err != nil {
			return "", err
		}
		for _, it := range items {
			if _, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: ptr(lease.TableV2), Item: it}); err != nil {
				return "", err
			}
		}
		after, _ := g.store.TableID(ctx)
		// The running processes must take the restored table for what it is, a backup from before
		// their claims (none of its lease rows, or no metadata row at all for the first backup):
		// for two renew intervals nobody claims from it.
		backupRows := 0
		for _, it := range items {
			if !isMeta(it) {
				backupRows++
			}
		}
		sleep(ctx, 2*renew)
		rows, err := g.store.List(ctx)
		if err != nil {
			return "", err
		}
		if len(rows) != backupRows {
			return "", fmt.Errorf("dynamo: %d lease rows in the restored table before its fence, the backup had %d: a claim on a restored table", len(rows), backupRows)
		}
		out, err := e.idgenctl(ctx, g, "fence-restore")
		if err != nil {
			return "", err
		}
		desc = fmt.Sprintf("dynamo: table replaced by a backup %s old (%d items, TableId %.8s… → %.8s…), no claim from it in %s; idgenctl: %s", age, len(items), before, after, 2*renew, lastLine(out))
	}
	if err := e.takeBackup(ctx, g); err != nil {
		desc += fmt.Sprintf(" (next backup: %v)", err)
	}
	return desc, nil
}

// otherRules starts one more generator on g's store and range with a lease twice the table's
// (its rules say leaseLen): it must refuse to start, naming both values, and issue nothing.
func (e *env) otherRules(ctx context.Context, g *group) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	other := 2 * leaseLen
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, filepath.Join(e.bins, "generator"), "--insecure-dev", "--clock-check", "strict",
		"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--lease-store", g.storeArg, "--range", fmt.Sprintf("%d-%d", g.machines[0], g.machines[0]),
		"--lease", other.String(), "--renew", renew.String(), "--fence-margin", margin.String())
	out, err := cmd.CombinedOutput()
	want := fmt.Sprintf("lease %v (the table's: %v)", other, leaseLen)
	switch {
	case cctx.Err() != nil:
		return "", fmt.Errorf("%s: a generator with a %v lease on a table whose rules say %v did not refuse to start within 30 s:\n%s", g.name, other, leaseLen, out)
	case err == nil || !strings.Contains(string(out), want):
		return "", fmt.Errorf("%s: a generator with a %v lease on a table whose rules say %v: %v, without naming both values (%q):\n%s", g.name, other, leaseLen, err, want, out)
	}
	return fmt.Sprintf("%s: a generator with a %v lease refused to start: %s", g.name, other, want), nil
}

// isMeta reports whether a lease-table item is the metadata row.
func isMeta(it map[string]types.AttributeValue) bool {
	n, ok := it["machine_id"].(*types.AttributeValueMemberN)
	return ok && n.Value == strconv.Itoa(lease.MetaMachine)
}

// readBackup reads the lease table's items from a copy of dynalite's data folder, through a
// second dynalite started on it.
func (e *env) readBackup(ctx context.Context, dir string) ([]map[string]types.AttributeValue, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	copyDir := dir + "-read"
	os.RemoveAll(copyDir)
	if out, err := exec.Command("cp", "-a", dir, copyDir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy backup: %v: %s", err, out)
	}
	defer os.RemoveAll(copyDir)
	d := &dynalite{root: e.dyn.root, dir: copyDir, port: port, log: e.dyn.log, endpoint: fmt.Sprintf("http://127.0.0.1:%d", port)}
	if err := d.start(); err != nil {
		return nil, err
	}
	defer d.kill()
	db, err := dynamolease.NewClient(ctx, d.endpoint)
	if err != nil {
		return nil, err
	}
	var items []map[string]types.AttributeValue
	var start map[string]types.AttributeValue
	for {
		out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: ptr(lease.TableV2), ExclusiveStartKey: start, ConsistentRead: ptr(true)})
		if err != nil {
			return nil, fmt.Errorf("read backup: %w", err)
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return items, nil
		}
		start = out.LastEvaluatedKey
	}
}

func ptr[T any](v T) *T { return &v }

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
