package gameday

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/idgen/idgen/libs/idcore/embedded/nodeout"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/libs/localstack"
	"github.com/idgen/idgen/libs/localstack/cmdline"
	"github.com/idgen/idgen/libs/localstack/fakenlb"
	"github.com/idgen/idgen/libs/localstack/proc"
)

// The programs a game day runs: the local stack's services (localstack.Binaries) and its own.
var programs = append(localstack.BinariesNamed("registry", "generator", "public-id", "public-id-gateway"),
	localstack.Binary{Name: "idnode", Pkg: "./libs/idcore/embedded/idnode"},
	localstack.Binary{Name: "caller", Pkg: "./tools/gameday/cmd/caller"},
	localstack.Binary{Name: "customer", Pkg: "./tools/gameday/cmd/customer"})

// stack is the game day's processes, built on the local stack's (libs/localstack): its registry
// and generators are the stack's services (RegistryService, GeneratorService), its binaries built
// by localstack.Build, its lease and public-ID stores started by libs/localstack/dynalite, its
// callers' client config written by localstack.WriteClientConfig. Beyond the local stack it runs
// five regions: per region its lease store (dynalite), its generators behind a load balancer
// (libs/localstack/fakenlb, the NLB's stand-in), an embedded node on the same lease table and a
// caller through libs/idclient.
type stack struct {
	root, dir, logs string
	sc              *Scenario
	bins            map[string]string // program name → binary
	registry        *proc.Proc
	registryPort    int
	registryStarts  int // restarts (registry-down phases): each writes registry-N.log
	registryURL     string
	regions         map[string]*regionProcs
	rec             *recorder
	cust            *customers // the public-ID side, when the scenario has customers
	ctx             context.Context
	stopped         sync.Once
}

type regionProcs struct {
	name   string
	number int
	peer   string // the registry's

	store     *proc.Proc
	storePort int
	storeEP   string
	lb        *fakenlb.NLB
	gens      []*generator
	node      *proc.Proc
	caller    *proc.Proc
}

type generator struct {
	name   string
	port   int
	mu     sync.Mutex
	p      *proc.Proc
	target string // its name in the load balancer: name#incarnation after a rolling restart
	inc    int
}

func (g *generator) proc() *proc.Proc { g.mu.Lock(); defer g.mu.Unlock(); return g.p }

// build compiles the programs once (localstack.Build, through proc's cache).
func (s *stack) build(ctx context.Context) (err error) {
	s.bins, err = localstack.Build(ctx, s.root, "", programs, nil)
	return err
}

func (s *stack) start(ctx context.Context, spec proc.Spec) (*proc.Proc, error) {
	if spec.Log == "" && spec.Output == nil {
		spec.Log = filepath.Join(s.logs, spec.Name+".log")
	}
	p, err := proc.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := p.WaitHealthy(wctx); err != nil {
		_ = p.Kill()
		return nil, fmt.Errorf("%w\n%s", err, p.Tail(20))
	}
	return p, nil
}

// startRegistry starts the registry (SQLite, seeded with the five default regions) and reads its
// regions: their numbers and peers are what the checks expect.
func (s *stack) startRegistry(ctx context.Context) (map[string]region.Region, error) {
	port, err := proc.PickPort()
	if err != nil {
		return nil, err
	}
	s.registryPort, s.registryURL = port, fmt.Sprintf("http://127.0.0.1:%d", port)
	s.registry, err = s.start(ctx, s.registrySpec())
	if err != nil {
		return nil, err
	}
	resp, err := http.Get(s.registryURL + "/v1/regions")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct{ Regions []region.Region }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("gameday: the registry's regions: %w", err)
	}
	out := map[string]region.Region{}
	for _, r := range body.Regions {
		out[r.Name] = r
	}
	return out, nil
}

// registryService is the registry of the local stack's description (localstack.RegistryService)
// on the game day's port, with its SQLite database (a restart finds the regions it had).
func (s *stack) registryService() localstack.Service {
	return localstack.RegistryService(fmt.Sprintf("127.0.0.1:%d", s.registryPort), "sqlite:"+filepath.Join(s.dir, "registry.db"))
}

// registrySpec is the registry's process.
func (s *stack) registrySpec() proc.Spec {
	return s.registryService().Spec(s.bins["registry"], s.root, s.logs)
}

// startStore starts the region's dynalite and creates its lease and history tables.
func (s *stack) startStore(ctx context.Context, r *regionProcs) error {
	port, err := proc.PickPort()
	if err != nil {
		return err
	}
	r.storePort, r.storeEP = port, fmt.Sprintf("http://127.0.0.1:%d", port)
	// libs/localstack/dynalite: dynalite with TransactWriteItems, as the lease drivers need.
	r.store, err = s.startDynalite(ctx, "store-"+r.name, port, dynamolease.Tables(lease.TableV2, lease.TableHistory))
	return err
}

func (s *stack) leaseFlags() []string {
	return []string{"--lease", s.sc.Lease.D().String(), "--renew", s.sc.Renew.D().String()}
}

// generatorSpec is the process of one of r's generators: a generator of the local stack's
// description (localstack.GeneratorService) on r's lease store, its region's number given, the
// service range, behind a load balancer (a deregistration delay of 1 s).
func (s *stack) generatorSpec(r *regionProcs, g *generator) (proc.Spec, error) {
	svc, err := localstack.GeneratorService(localstack.Generator{Name: g.name, Region: r.name, LeaseStore: "dynamodb:" + r.storeEP,
		Flags: cmdline.Generator{RegionNumber: strconv.Itoa(r.number), Range: "service",
			// Its copy of the registry's last answer, to start from while the registry is down:
			// one a generator, as on its own host.
			RegistryCache: filepath.Join(s.dir, "registry-cache", g.name+".json"),
			FenceMargin:   s.sc.Margin.D().String(), DeregistrationDelay: "1s", Drain: "2s",
			Lease: s.sc.Lease.D().String(), Renew: s.sc.Renew.D().String()}},
		fmt.Sprintf("127.0.0.1:%d", g.port), s.registryService())
	if err != nil {
		return proc.Spec{}, err
	}
	spec := svc.Spec(s.bins["generator"], s.root, s.logs)
	spec.Env, spec.Grace = []string{"AWS_REGION=" + r.name}, 15*time.Second
	return spec, nil
}

// startGenerator starts g's process (spec changes its spec first, when set).
func (s *stack) startGenerator(ctx context.Context, r *regionProcs, g *generator, change func(*proc.Spec)) (*proc.Proc, error) {
	spec, err := s.generatorSpec(r, g)
	if err != nil {
		return nil, err
	}
	if change != nil {
		change(&spec)
	}
	return s.start(ctx, spec)
}

// startGenerators starts the region's generators and its load balancer, and waits until every
// one is healthy behind it.
func (s *stack) startGenerators(ctx context.Context, r *regionProcs) error {
	lb, err := fakenlb.New(fakenlb.Config{Interval: 100 * time.Millisecond, HealthyThreshold: 2, UnhealthyThreshold: 2})
	if err != nil {
		return err
	}
	r.lb = lb
	for i := range s.sc.GeneratorsPerRegion {
		port, err := proc.PickPort()
		if err != nil {
			return err
		}
		g := &generator{name: fmt.Sprintf("generator-%s-%d", r.name, i+1), port: port}
		r.gens = append(r.gens, g)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(r.gens))
	for i, g := range r.gens {
		wg.Go(func() {
			p, err := s.startGenerator(ctx, r, g, nil)
			g.p, errs[i] = p, err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for _, g := range r.gens {
		g.register(lb)
	}
	return s.waitLB(ctx, r, len(r.gens))
}

// register registers the generator's current incarnation with the load balancer.
func (g *generator) register(lb *fakenlb.NLB) {
	g.mu.Lock()
	g.inc++
	g.target = fmt.Sprintf("%s#%d", g.name, g.inc)
	t := g.target
	g.mu.Unlock()
	lb.Register(t, fmt.Sprintf("127.0.0.1:%d", g.port), fmt.Sprintf("http://127.0.0.1:%d/healthz", g.port))
}

func (g *generator) targetName() string { g.mu.Lock(); defer g.mu.Unlock(); return g.target }

// healthyTargets counts the region's generators the load balancer sends traffic to.
func (r *regionProcs) healthyTargets() int {
	n := 0
	for _, g := range r.gens {
		if r.lb.State(g.targetName()) == "healthy" {
			n++
		}
	}
	return n
}

// waitLB waits until at least n of the region's generators are healthy behind its load balancer.
func (s *stack) waitLB(ctx context.Context, r *regionProcs, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for r.healthyTargets() < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("gameday: %s: %d of %d generators healthy behind the load balancer after 90 s", r.name, r.healthyTargets(), n)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// startNode starts the region's embedded node on the region's lease table (numbers 64-65, the
// embedded range), batches of 100 at the scenario's node rate, and records what it issues.
func (s *stack) startNode(ctx context.Context, r *regionProcs) error {
	pr, pw := io.Pipe()
	name := "node-" + r.name
	pause := time.Duration(float64(100) / s.sc.NodeRate * float64(time.Second))
	args := append([]string{"--store", "dynamodb:" + r.storeEP, "--region", strconv.Itoa(r.number), "--range", "64-65", "--batch", "100", "--pause", pause.String(),
		"--margin", s.sc.Margin.D().String()}, s.leaseFlags()...)
	started := time.Now()
	p, err := proc.Start(ctx, proc.Spec{Name: name, Bin: s.bins["idnode"], Args: args, Env: []string{"AWS_REGION=" + r.name},
		Log: filepath.Join(s.logs, name+".log"), Output: pw})
	if err != nil {
		return err
	}
	r.node = p
	series := s.rec.series(name, r.name, kindNode)
	first := make(chan struct{})
	var once sync.Once
	go func() {
		_ = nodeout.Scan(pr, started, func(l *nodeout.Line) {
			if l.Kind != nodeout.Batch {
				return
			}
			once.Do(func() { close(first) })
			for _, run := range l.Runs {
				series.add(l.Received, 0, 0, int64(run.First), run.N)
			}
		})
	}()
	go func() { _ = p.Wait(); pw.Close() }()
	select {
	case <-first:
		return nil
	case <-p.Done():
		return fmt.Errorf("gameday: %s exited before it issued: %s", name, p.Tail(20))
	case <-time.After(60 * time.Second):
		return fmt.Errorf("gameday: %s issued nothing within 60 s: %s", name, p.Tail(20))
	}
}

// startCaller starts the region's caller, configured from the client config file only, and
// records what it receives.
func (s *stack) startCaller(ctx context.Context, r *regionProcs, clientConfig string, metricsPort int) error {
	pr, pw := io.Pipe()
	name := "caller-" + r.name
	args := []string{"--client-config", clientConfig, "--region", r.name,
		"--rate", strconv.FormatFloat(s.sc.Rate, 'f', -1, 64), "--batch", strconv.Itoa(s.sc.Batch),
		"--probe-every", s.sc.ProbeEvery.D().String(), "--hedge-after", s.sc.HedgeAfter.D().String(),
		"--metrics", fmt.Sprintf("127.0.0.1:%d", metricsPort)}
	p, err := proc.Start(ctx, proc.Spec{Name: name, Bin: s.bins["caller"], Args: args,
		Log: filepath.Join(s.logs, name+".log"), Output: pw})
	if err != nil {
		return err
	}
	r.caller = p
	series := s.rec.series(name, r.name, kindCaller)
	first := make(chan struct{})
	var once sync.Once
	go func() {
		scanCaller(pr, series, func() { once.Do(func() { close(first) }) })
	}()
	go func() { _ = p.Wait(); pw.Close() }()
	select {
	case <-first:
		return nil
	case <-p.Done():
		return fmt.Errorf("gameday: %s exited before it received an ID: %s", name, p.Tail(20))
	case <-time.After(60 * time.Second):
		return fmt.Errorf("gameday: %s received no ID within 60 s: %s", name, p.Tail(20))
	}
}

// stopAll stops every process, once: callers first (they record to the end), then nodes,
// generators, stores and the registry.
func (s *stack) stopAll() { s.stopped.Do(s.stopAllOnce) }

func (s *stack) stopAllOnce() {
	var wg sync.WaitGroup
	each := func(f func(r *regionProcs)) {
		for _, r := range s.regions {
			wg.Go(func() { f(r) })
		}
		wg.Wait()
	}
	stop := func(p *proc.Proc) {
		if p != nil {
			_ = p.Signal(syscall.SIGCONT) // a frozen process cannot stop
			_ = p.Stop()
		}
	}
	s.stopCustomerClients()
	each(func(r *regionProcs) { stop(r.caller) })
	s.stopPublicSide()
	each(func(r *regionProcs) {
		if r.store != nil {
			_ = r.store.Signal(syscall.SIGCONT)
		}
		stop(r.node)
		for _, g := range r.gens {
			stop(g.proc())
		}
		if r.lb != nil {
			r.lb.Close()
		}
	})
	each(func(r *regionProcs) { stop(r.store) })
	stop(s.registry)
}
