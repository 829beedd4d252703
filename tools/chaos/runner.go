package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
	"github.com/idgen/idgen/libs/localstack/cmdline"
	"github.com/idgen/idgen/libs/localstack/dynalite"
	"github.com/idgen/idgen/libs/localstack/proc"
)

// group is the processes sharing one lease store.
type group struct {
	name     string // dynamo or sqlite
	storeArg string // sqlite:PATH or dynamodb:URL
	store    lease.Store
	machines []int // the numbers its processes share
	procs    []*slot

	backup   string // the last backup: a copy of the SQLite file or of dynalite's data folder
	backedUp time.Time
}

// runner is one chaos run: its stores and processes, the load on them, the faults injected and
// what the processes returned. Its phases are its methods, in the order run calls them: setUp,
// start, inject, stop, report, close.
type runner struct {
	cfg  config
	root string // the repository
	work string // logs, stores and backups

	generator, node, ctl string // the built binaries: generator and node with the chaos tag, idgenctl
	yes                  bool   // idgenctl asks for --yes on quarantine, lift and fence-restore
	dyn                  *dynalite.Server
	db                   *dynamodb.Client
	groups               []*group
	procs                []*slot
	rec                  *recorder

	ctx      context.Context // ends on SIGINT or SIGTERM, or when a duplicate is found while running
	stopSig  context.CancelFunc
	stopRun  context.CancelFunc
	stopLoad context.CancelFunc
	loads    sync.WaitGroup
	watch    sync.WaitGroup
	began    time.Time // when every process had started
	elapsed  time.Duration
	windows  []window

	hidden      []hiddenStep // excused by the faults (excuser), for the check
	ctlFailures []string     // idgenctl commands that failed
}

func newRunner(c config) (*runner, error) {
	root, err := proc.RepoRoot()
	if err != nil {
		return nil, fmt.Errorf("run from inside the idgen repository: %w", err)
	}
	work, err := os.MkdirTemp("", "idgen-chaos-")
	if err != nil {
		return nil, err
	}
	return &runner{cfg: c, root: root, work: work, rec: &recorder{}}, nil
}

// close kills whatever still runs and removes the work folder when the run passed (and --keep
// is not set).
func (r *runner) close(passed bool) {
	if r.stopRun != nil {
		r.stopRun()
		r.stopSig()
		r.watch.Wait()
	}
	if r.stopLoad != nil {
		r.stopLoad()
		r.loads.Wait()
	}
	for _, p := range r.procs {
		p.signal(syscall.SIGCONT)
		p.signal(syscall.SIGKILL)
	}
	if r.dyn != nil {
		r.dyn.Kill()
	}
	if passed && !r.cfg.keep {
		os.RemoveAll(r.work)
	} else {
		fmt.Printf("chaos: logs and stores kept in %s\n", r.work)
	}
}

// setUp builds the binaries, starts dynalite, makes both stores, defines the processes and takes
// the first backups, before the first claim.
func (r *runner) setUp() error {
	ctx := context.Background()
	// The generator and the node are built with the chaos tag, which adds the clock option
	// (--chaos-clock-file); idgenctl as it ships.
	bins, err := proc.BuildWith(ctx, proc.BuildOptions{Tags: []string{"chaos"}, Dir: r.root},
		"./services/generator/cmd/generator", "./libs/idcore/embedded/idnode")
	if err != nil {
		return err
	}
	r.generator, r.node = bins[0], bins[1]
	if bins, err = proc.BuildWith(ctx, proc.BuildOptions{Dir: r.root}, "./tools/idgenctl"); err != nil {
		return err
	}
	r.ctl = bins[0]
	r.yes = ctlHasYes(r.ctl)

	// The stores: dynalite keeps its data in a folder, so it survives kill -9.
	dir := filepath.Join(r.work, "dynalite")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if r.dyn, err = dynalite.Start(ctx, dynalite.Options{Dir: dir, Tables: []dynalite.Tables{dynamolease.Tables(lease.TableV2, lease.TableHistory)}}); err != nil {
		return err
	}
	if r.db, err = dynamolease.NewClient(ctx, r.dyn.Endpoint); err != nil {
		return err
	}
	sqlPath := filepath.Join(r.work, "leases.db")
	sq, err := sqlitelease.Open(ctx, sqlPath, lease.TableV2)
	if err != nil {
		return err
	}
	sq.Close()
	if err := os.MkdirAll(filepath.Join(r.work, "clock"), 0o755); err != nil {
		return err
	}
	// The SQLite file's rules are written as the bootstrap writes them (idgenctl leases init);
	// dynalite's table gets them from its first holder.
	if out, err := exec.Command(r.ctl, "leases", "init", "--lease", leaseLen.String(), "--margin", margin.String(),
		"--lease-store", "sqlite:"+sqlPath, "--region", "us-east-1").CombinedOutput(); err != nil {
		return fmt.Errorf("idgenctl leases init: %v: %s", err, out)
	}

	r.groups = []*group{
		{name: "dynamo", storeArg: "dynamodb:" + r.dyn.Endpoint, store: dynamolease.New(r.db, lease.TableV2, lease.TableHistory)},
		{name: "sqlite", storeArg: "sqlite:" + sqlPath},
	}
	if err := r.defineProcs(); err != nil {
		return err
	}
	// The first backups, before any process starts: before the first claim, so dynalite's has no
	// metadata row at all (its restore must not pass for a new table: the lease history holds the
	// table's claims by then), and SQLite's only the rules.
	for _, g := range r.groups {
		if err := r.takeBackup(ctx, g); err != nil {
			return err
		}
		fmt.Printf("t+0s      %-17s %s (before the first claim)\n", "backup", g.name)
	}
	return nil
}

// defineProcs gives each group its processes: generators generators on generators-1 numbers and
// nodes nodes on nodes-1 numbers; the groups' numbers are disjoint (their stores are
// independent).
func (r *runner) defineProcs() error {
	gens, nodes := r.cfg.generators, r.cfg.nodes
	for gi, g := range r.groups {
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
			gp, err := proc.PickPort()
			if err != nil {
				return err
			}
			name := fmt.Sprintf("%s/gen-%d", g.name, i+1)
			p := &slot{name: name, kind: "generator", bin: r.generator,
				url: fmt.Sprintf("http://127.0.0.1:%d", gp), logs: r.work, rec: r.rec, clock: r.clockFile(name),
				args: cmdline.Generator{ClockCheck: "strict", Listen: fmt.Sprintf("127.0.0.1:%d", gp),
					LeaseStore: g.storeArg, Range: fmt.Sprintf("%d-%d", gLo, gHi),
					Lease: leaseLen.String(), Renew: renew.String(), FenceMargin: margin.String(), Drain: "2s"}.Args()}
			p.args = append(p.args, "--chaos-clock-file", p.clock)
			g.procs = append(g.procs, p)
		}
		for i := range nodes {
			name := fmt.Sprintf("%s/node-%d", g.name, i+1)
			p := &slot{name: name, kind: "node", bin: r.node, logs: r.work, rec: r.rec, clock: r.clockFile(name),
				args: []string{"--store", g.storeArg, "--range", fmt.Sprintf("%d-%d", pLo, pHi), "--batch", fmt.Sprint(r.cfg.batch),
					"--pause", r.cfg.nodePause.String(), "--lease", leaseLen.String(), "--renew", renew.String(), "--margin", margin.String()}}
			p.args = append(p.args, "--chaos-clock-file", p.clock)
			g.procs = append(g.procs, p)
		}
		r.procs = append(r.procs, g.procs...)
	}
	return nil
}

// clockFile is the file a slot's clock offset and estimated error are written to.
func (r *runner) clockFile(slot string) string {
	return filepath.Join(r.work, "clock", strings.ReplaceAll(slot, "/", "_"))
}

// start starts every process, the load on the generators, and the check for duplicates while the
// run goes on (every 10 s, then every tenth of the time so far: a long soak's runs take a while
// to sort), which ends the run on the first.
func (r *runner) start() error {
	for _, p := range r.procs {
		if err := p.setClock(0, 0); err != nil {
			return err
		}
		if err := p.start(); err != nil {
			return err
		}
	}
	r.began = time.Now()
	r.windows = []window{{kind: "none", start: r.began}}
	var loadCtx context.Context
	loadCtx, r.stopLoad = context.WithCancel(context.Background())
	for _, p := range r.procs {
		if p.kind == "generator" {
			r.loads.Go(func() { p.load(loadCtx, min(r.cfg.batch, 1000), r.cfg.generatorPause) })
		}
	}
	var sigCtx context.Context
	sigCtx, r.stopSig = signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	r.ctx, r.stopRun = context.WithCancel(sigCtx)
	r.watch.Go(func() {
		for r.ctx.Err() == nil {
			sleep(r.ctx, max(10*time.Second, time.Since(r.began)/10))
			if dups, _, _ := dupCheck(r.rec.series()); len(dups) > 0 {
				fmt.Printf("chaos: DUPLICATE id %d returned by %s and by %s: stopping\n", dups[0].id, dups[0].a, dups[0].b)
				r.stopRun()
			}
		}
	})
	return nil
}

// inject carries out the schedule drawn from the seed, one fault at a time, until the duration
// ends or the run is stopped. An operator command that fails under the faults is reported, and
// the run goes on; any other failure to inject ends the run with an error.
func (r *runner) inject() error {
	for _, f := range plan(r.cfg.seed, r.cfg.duration, len(r.procs), len(r.groups)) {
		sleep(r.ctx, time.Until(r.began.Add(f.at)))
		if r.ctx.Err() != nil {
			break
		}
		at := time.Now()
		r.windows = append(r.windows, window{kind: f.Name(), start: at})
		desc, err := f.Inject(r.ctx, r)
		if ex, ok := f.Fault.(excuser); ok {
			r.hidden = append(r.hidden, ex.excused()...)
		}
		since := at.Sub(r.began).Round(100 * time.Millisecond)
		var ce ctlError
		if errors.As(err, &ce) {
			desc, err = "FAILED: "+ce.Error(), nil
			r.ctlFailures = append(r.ctlFailures, fmt.Sprintf("t+%s %s: %s", since, f.Name(), ce.Error()))
		}
		fmt.Printf("t+%-7s %-17s %s\n", since, f.Name(), desc)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name(), err)
		}
	}
	sleep(r.ctx, time.Until(r.began.Add(r.cfg.duration)))
	return nil
}

// stop ends the run: the duplicate watch, the load, then every process gracefully (SIGTERM).
func (r *runner) stop() {
	r.stopRun()
	r.watch.Wait()
	r.stopLoad()
	r.loads.Wait()
	var sw sync.WaitGroup
	for _, p := range r.procs {
		sw.Go(p.stop)
	}
	sw.Wait()
	r.elapsed = time.Since(r.began)
}

// report checks every ID the processes returned, prints the table and what failed, writes the
// results file when --results names one, and returns the exit status: 1 on a duplicate, IDs out
// of order or past their fence, or from a clock beyond the bound that its discipline reported.
func (r *runner) report() int {
	all := r.rec.series()
	rep := check(all, r.windows, r.hidden)
	res := &results{Seed: r.cfg.seed, Duration: duration(r.cfg.duration), Elapsed: duration(r.elapsed), IDs: rep.total,
		Incarnations: len(all), OperatorFailures: r.ctlFailures, Failures: []string{}}
	res.Rows, res.UnavailableTotal = rep.resultRows()
	for _, s := range all {
		s.mu.Lock()
		if strings.Contains(s.slot, "/gen-") {
			res.FromGenerators += s.n
		} else {
			res.FromNodes += s.n
		}
		res.FenceChecks += s.fenceChecks
		s.mu.Unlock()
	}
	for _, d := range rep.disorders {
		res.Failures = append(res.Failures, "chaos: IDs not strictly increasing: "+d)
	}
	for _, d := range rep.fences {
		res.Failures = append(res.Failures, "chaos: ID past its fence: "+d)
	}
	for _, d := range rep.offClock {
		res.Failures = append(res.Failures, "chaos: IDs from a clock beyond the bound: "+d)
	}
	if len(rep.dups) > 0 {
		d := rep.dups[0]
		res.Failures = append(res.Failures, fmt.Sprintf("chaos: DUPLICATE id %d returned by %s and by %s (%d IDs returned twice in all)", d.id, d.a, d.b, rep.dupIDs))
	}
	if rep.total == 0 {
		res.Failures = append(res.Failures, "chaos: no ID checked")
	}
	fmt.Println()
	printTable(os.Stdout, res.Rows, res.UnavailableTotal)
	fmt.Printf("\n%d IDs from %d process incarnations over %s (%.2f M IDs/min), seed %d\n", rep.total, len(all),
		r.elapsed.Round(time.Second), float64(rep.total)/r.elapsed.Minutes()/1e6, r.cfg.seed)
	fmt.Printf("%d from generators (HTTP batches), %d from embedded nodes; %d batches checked against their holder's fence\n", res.FromGenerators, res.FromNodes, res.FenceChecks)
	for _, c := range r.ctlFailures {
		fmt.Printf("chaos: operator command failed (reported, not a broken promise): %s\n", c)
	}
	for _, f := range res.Failures {
		fmt.Println(f)
	}
	if r.cfg.results != "" {
		if err := writeResults(r.cfg.results, res); err != nil {
			fmt.Printf("chaos: the results file: %v\n", err)
		} else {
			fmt.Printf("chaos: results in %s (the README's block: go run ./tools/chaos --readme-block %s)\n", r.cfg.results, r.cfg.results)
		}
	}
	if rep.failed() {
		return 1
	}
	fmt.Println("chaos: no duplicates")
	return 0
}
