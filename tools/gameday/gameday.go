// Package gameday runs a five-region game day on one machine: the registry, five regions of
// generators (each region its own lease store, dynalite, and its generators behind a load
// balancer), an embedded node per region and a caller per region through libs/idclient, all real
// processes on loopback, driven by a scenario file (scenarios/*.json) with a seed that is
// printed. The callers are configured from the topology module's plan (libs/topology): the client
// config file they read is its client_config with each region's load balancer in place of its
// endpoint, so each caller's peer is the one Terraform lays out.
//
// From every ID each caller and embedded node received it checks: no duplicate; each caller's IDs
// carry its own region's number while that region is up and its peer's (the registry's) while it
// is down; the embedded nodes go on through the fleet's loss (they stop only when their own lease
// store is down past the fence); every caller is back on its own region within the scenario's
// bound once its region is healthy; no call to Next failed. It prints a table per phase, writes a
// timeline picture (timeline.svg) and fails when a check does.
//
// With the scenario's customers it also runs the public-ID side in those regions (customers.go):
// per region a store of record, the internal API and the gateway on --store regions:FILE (the
// topology's numbers and peers), an order service and a customer that publishes its region's IDs
// and opens each at every region's gateway; the public-id-* faults lose a region for good (it
// comes back empty and is filled before it takes customers), freeze its store, or partition it
// from its peer. It checks (custcheck.go): no 404 for an acknowledged public ID, ever; customer
// errors only within their bound; the returned region answers every public ID once it takes
// customers; every acknowledged public ID answers its internal ID in every region at the end.
package gameday

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/libs/localstack"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/topology"
)

// Options are one run's settings.
type Options struct {
	Scenario *Scenario
	// Seed draws the "random" regions of the scenario.
	Seed uint64
	// Root is the repository (the programs are built from it, dynalite run from its node_modules).
	Root string
	// Out is the folder of the results: table.txt, results.json (ReadmeBlock's), timeline.svg,
	// client_config.json and logs/.
	Out string
	// TopologyVars are the topology module's variables (nil: its defaults, the five regions).
	TopologyVars map[string]any
	// Prometheus, when set, also runs Prometheus and Alertmanager with idgen's alert rules
	// (durations shortened to AlertFor) scraping the callers, and checks that
	// IdgenClientOnPeerRegion fires for each lost region's caller while it is down.
	Prometheus bool
	// Log gets the progress. Default: discarded.
	Log io.Writer
}

// AlertFor is the alert rules' duration in a run with Prometheus: the rules' own (5m for
// IdgenClientOnPeerRegion) would outlast every phase.
const AlertFor = "3s"

// Result is what a run found.
type Result struct {
	Seed     uint64
	Phases   []*PhaseResult
	Failures []string // every failed check, each naming its caller, node or region
	IDs      int64    // IDs checked
	// Inconclusive: every failed check was in a phase where this machine stalled (the run's
	// own timers late by MachineStallBound or more): the checks say nothing about idgen then.
	Inconclusive bool
	Customers    *CustomerTotals // the public-ID side, when the scenario has customers
	Table        string          `json:"-"` // a table per phase
	Summary      string          `json:"-"` // a line per phase
}

// phaseRun is a phase as it ran.
type phaseRun struct {
	Phase
	Start, End time.Time
	FaultAt    time.Time // the fault was injected (lost phases, rolling)
	RestoreAt  time.Time // the region was brought back
	HealthyAt  time.Time // the region's load balancer had a healthy generator again
	// registry-down: the registry killed and started again, and each generator that did not
	// start while it was down (a failed check).
	RegistryDownAt, RegistryUpAt time.Time
	StartFailures                []string
	// public-id-lost: the returned region's /healthz first said region_filling, its internal API
	// was healthy (filled), and its gateway too (it takes customers again: ReadyAt; for the other
	// public-id-* faults, the restore); the acknowledged public IDs then asked of it and those it
	// did not answer with their internal ID.
	FillingSeenAt, FilledAt, ReadyAt time.Time
	BackChecked                      int
	BackMissing                      []string
}

func (p *phaseRun) lost() bool { return p.Fault.lost() }

// Run runs the game day and returns what it found; err is for a run that could not be made
// (a process that would not start, a topology that does not plan), not for failed checks.
func Run(ctx context.Context, o Options) (*Result, error) {
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "gameday: "+format+"\n", args...) }
	sc := o.Scenario
	logs := filepath.Join(o.Out, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, err
	}

	tp, err := topology.Plan(ctx, topology.Options{Module: filepath.Join(o.Root, "infra", "terraform", "modules", "topology"), Vars: o.TopologyVars})
	if err != nil {
		return nil, err
	}
	names := tp.RegionNames()
	phases, err := sc.Resolve(o.Seed, names)
	if err != nil {
		return nil, err
	}
	logf("scenario %q, seed %d, regions %v", sc.Name, o.Seed, names)

	s := &stack{root: o.Root, dir: o.Out, logs: logs, sc: sc, regions: map[string]*regionProcs{}, rec: &recorder{}, ctx: ctx}
	if sc.Customers != nil {
		if s.cust, err = setupCustomers(sc, tp); err != nil {
			return nil, err
		}
		logf("customers in %d of the %d regions: %v (the scenario's; a public-ID store, internal API, gateway, order service and customer each)",
			len(s.cust.names), len(names), s.cust.names)
	}
	defer s.stopAll()
	t0 := time.Now()
	if err := s.build(ctx); err != nil {
		return nil, err
	}
	logf("built %d programs in %v", len(programs), time.Since(t0).Round(time.Millisecond))
	reg, err := s.startRegistry(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		r, ok := reg[n]
		if !ok || r.Status != region.Active {
			return nil, fmt.Errorf("gameday: region %s of the topology is not an active region of the registry", n)
		}
		if r.Number != tp.Regions[n].Number {
			return nil, fmt.Errorf("gameday: region %s has number %d in the topology and %d in the registry", n, tp.Regions[n].Number, r.Number)
		}
		s.regions[n] = &regionProcs{name: n, number: r.Number, peer: r.Peer}
	}
	if err := s.each(func(r *regionProcs) error {
		if err := s.startStore(ctx, r); err != nil {
			return err
		}
		return s.startGenerators(ctx, r)
	}); err != nil {
		return nil, err
	}
	addrs := map[string]string{}
	for n, r := range s.regions {
		addrs[n] = r.lb.URL()
	}
	ccFile := localstack.ClientConfigFile(o.Out)
	if err := localstack.WriteClientConfig(ccFile, tp, addrs); err != nil {
		return nil, err
	}
	metricsPorts := map[string]int{}
	for _, n := range names {
		if metricsPorts[n], err = proc.PickPort(); err != nil {
			return nil, err
		}
	}
	if err := s.each(func(r *regionProcs) error {
		if err := s.startNode(ctx, r); err != nil {
			return err
		}
		return s.startCaller(ctx, r, ccFile, metricsPorts[r.name])
	}); err != nil {
		return nil, err
	}
	if s.cust != nil {
		t1 := time.Now()
		if err := s.startCustomers(ctx, ccFile); err != nil {
			return nil, err
		}
		logf("customers up in %v: %d public-ID stores, internal APIs, gateways and customer clients", time.Since(t1).Round(time.Millisecond), len(s.cust.names))
	}
	var prom *promRun
	if o.Prometheus {
		if prom, err = startPrometheus(ctx, o.Root, filepath.Join(o.Out, "prometheus"), metricsPorts); err != nil {
			return nil, err
		}
		defer prom.stop()
	}
	logf("five regions up in %v: %d generators, 5 embedded nodes, 5 callers from %s", time.Since(t0).Round(time.Millisecond),
		len(names)*sc.GeneratorsPerRegion, ccFile)

	dog := startWatchdog()
	defer dog.stop()
	var runs []*phaseRun
	var alerts []alertSeen
	for _, p := range phases {
		pr := &phaseRun{Phase: p, Start: time.Now()}
		runs = append(runs, pr)
		logf("phase %q: %s %s", p.Name, p.Fault, p.Region)
		var watch *alertWatch
		if prom != nil && pr.lost() {
			watch = prom.watch(ctx, "caller-"+p.Region)
		}
		if err := s.runPhase(ctx, pr); err != nil {
			return nil, fmt.Errorf("gameday: phase %s: %w", p.Name, err)
		}
		if watch != nil {
			alerts = append(alerts, watch.result(p.Name, p.Region))
		}
		pr.End = time.Now()
	}
	var end *endCheck
	var exited []string
	if s.cust != nil {
		exited = s.cust.exited()
		s.stopCustomerClients()
		end = s.checkEnd()
		logf("customers: every acknowledged public ID asked of every region: %d asked, %d not answered with its internal ID", end.asked, len(end.missing))
	}
	s.stopAll()
	dog.stop()
	res := analyse(s, runs, o.Seed)
	if s.cust != nil {
		analyseCustomers(s, runs, end, res)
		for _, e := range exited {
			res.Failures = append(res.Failures, "run: "+e)
		}
	}
	for _, a := range alerts {
		if !a.fired {
			res.Failures = append(res.Failures, fmt.Sprintf("%s: IdgenClientOnPeerRegion never fired for caller-%s while %s was down", a.phase, a.region, a.region))
		}
	}
	res.inconclusive(runs, dog.stalls())
	res.Table = renderTable(sc, res, alerts)
	res.Summary = summary(res)
	if err := os.WriteFile(filepath.Join(o.Out, "table.txt"), []byte(res.Summary+"\n"+res.Table), 0o644); err != nil {
		return nil, err
	}
	if err := writeResults(o.Out, sc, res); err != nil {
		return nil, err
	}
	if err := plotTimeline(s, runs, res, filepath.Join(o.Out, "timeline.svg")); err != nil {
		return res, fmt.Errorf("gameday: the picture: %w", err)
	}
	return res, nil
}

// each runs f for every region at once and returns the first error.
func (s *stack) each(f func(r *regionProcs) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, r := range s.regions {
		wg.Go(func() {
			if err := f(r); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", r.name, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// runPhase does the phase's fault to its region, brings the region back, and lets the phase
// settle.
func (s *stack) runPhase(ctx context.Context, p *phaseRun) error {
	if p.Fault == Steady {
		return sleep(ctx, p.Settle.D())
	}
	if p.Fault.customer() {
		return s.runCustomerPhase(ctx, p)
	}
	r := s.regions[p.Region]
	gens := func(f func(g *generator) error) error {
		var wg sync.WaitGroup
		errs := make([]error, len(r.gens))
		for i, g := range r.gens {
			wg.Go(func() { errs[i] = f(g) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	restart := func(g *generator) error {
		np, err := s.startGenerator(ctx, r, g, nil)
		if err != nil {
			return err
		}
		g.mu.Lock()
		g.p = np
		g.mu.Unlock()
		return nil
	}
	p.FaultAt = time.Now()
	switch p.Fault {
	case Kill:
		if err := gens(func(g *generator) error { _ = g.proc().Kill(); return nil }); err != nil {
			return err
		}
	case Freeze:
		if err := gens(func(g *generator) error { return g.proc().Signal(syscall.SIGSTOP) }); err != nil {
			return err
		}
	case StoreDown:
		if err := r.store.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
	case RegistryDown:
		_ = s.registry.Kill()
		p.RegistryDownAt = time.Now()
		if err := gens(func(g *generator) error { _ = g.proc().Kill(); return nil }); err != nil {
			return err
		}
	case Rolling:
		// As an instance refresh does it: the target leaves the target group (no new
		// connections), the process is stopped (its deregistration delay, drain and lease
		// release), the new one starts and is registered, and the next waits until it is healthy.
		for _, g := range r.gens {
			r.lb.Deregister(g.targetName())
			if err := g.proc().Stop(); err != nil {
				return fmt.Errorf("%s did not stop cleanly: %w", g.name, err)
			}
			if err := restart(g); err != nil {
				return err
			}
			g.register(r.lb)
			if err := s.waitLB(ctx, r, len(r.gens)); err != nil {
				return err
			}
		}
		p.RestoreAt, p.HealthyAt = time.Now(), time.Now()
		return sleep(ctx, p.Settle.D())
	}
	if err := sleep(ctx, p.Hold.D()); err != nil {
		return err
	}
	p.RestoreAt = time.Now()
	healthy := make(chan time.Time, 1) // the first moment the balancer has a healthy generator again
	go func() {
		deadline := time.Now().Add(90 * time.Second)
		for r.healthyTargets() == 0 && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		if r.healthyTargets() == 0 {
			healthy <- time.Time{}
			return
		}
		healthy <- time.Now()
	}()
	var err error
	switch p.Fault {
	case Kill:
		err = gens(restart)
	case Freeze:
		err = gens(func(g *generator) error { return g.proc().Signal(syscall.SIGCONT) })
	case StoreDown:
		err = r.store.Signal(syscall.SIGCONT)
	case RegistryDown:
		err = s.restartWithoutRegistry(ctx, p, r, restart)
	}
	if err != nil {
		return err
	}
	p.HealthyAt = <-healthy
	if p.HealthyAt.IsZero() {
		return fmt.Errorf("%s: no generator healthy behind the load balancer within 90 s of the restore", r.name)
	}
	if err := s.waitLB(ctx, r, len(r.gens)); err != nil {
		return err
	}
	if p.Fault == RegistryDown && p.RegistryUpAt.IsZero() {
		if err := sleep(ctx, max(0, p.Settle.D()/2-time.Since(p.HealthyAt))); err != nil {
			return err
		}
		if err := s.restartRegistry(ctx, p); err != nil {
			return err
		}
	}
	return sleep(ctx, max(0, p.Settle.D()-time.Since(p.HealthyAt)))
}

// restartWithoutRegistry starts the region's generators again while the registry is down. One
// that does not start is a failed check of the phase (StartFailures, with its last log line):
// the registry is then started again, and so are they, so that the run goes on.
func (s *stack) restartWithoutRegistry(ctx context.Context, p *phaseRun, r *regionProcs, restart func(g *generator) error) error {
	var mu sync.Mutex
	var failed []*generator
	var wg sync.WaitGroup
	for _, g := range r.gens {
		wg.Go(func() {
			np, err := s.startGenerator(ctx, r, g, func(spec *proc.Spec) { spec.Log = filepath.Join(s.logs, g.name+"-registry-down.log") })
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, g)
				p.StartFailures = append(p.StartFailures, fmt.Sprintf("%s did not start while the registry was down: %s", g.name, lastLine(err.Error())))
				return
			}
			g.mu.Lock()
			g.p = np
			g.mu.Unlock()
		})
	}
	wg.Wait()
	if len(failed) == 0 {
		return nil
	}
	slices.Sort(p.StartFailures)
	if err := s.restartRegistry(ctx, p); err != nil {
		return err
	}
	for _, g := range failed {
		if err := restart(g); err != nil {
			return err
		}
	}
	return nil
}

// restartRegistry starts the registry again, on its address and database.
func (s *stack) restartRegistry(ctx context.Context, p *phaseRun) error {
	s.registryStarts++
	spec := s.registrySpec()
	spec.Log = filepath.Join(s.logs, fmt.Sprintf("registry-%d.log", s.registryStarts))
	np, err := s.start(ctx, spec)
	if err != nil {
		return fmt.Errorf("the registry did not start again: %w", err)
	}
	s.registry = np
	p.RegistryUpAt = time.Now()
	return nil
}

// lastLine is the last line of s that is not blank.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// regionOf returns the region name of number n among the stack's regions.
func (s *stack) regionOf(n int) string {
	for _, r := range s.regions {
		if r.number == n {
			return r.name
		}
	}
	return fmt.Sprintf("region %d", n)
}

func sortedRegions(s *stack) []*regionProcs {
	var out []*regionProcs
	for _, r := range s.regions {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *regionProcs) int { return a.number - b.number })
	return out
}
