// Package localstack is idgen's local stack written down once: which programs it builds, which
// processes it runs, on which ports, with which flags and state files, in which order, and how
// each one's health is checked. make run (scripts/run-local.sh, tools/runlocal), the docs tests,
// the runbook tests, the dashboards' end-to-end test and the public-ID demo test all start this
// one description; Options change what a caller needs changed (stores, extra flags, more
// generators, free ports instead of make run's 7000–7006).
//
// Plan resolves the description into Services, plain data; Start writes the callers' client
// config from the topology module's plan (WriteClientConfig, the one writer of it), builds the
// binaries and starts the processes (through libs/localstack/proc, so they die with the process
// that started them), and StartT does the same for a test. make run's command uses Start; the
// tests use StartT. The game day builds its five regions from the same parts: Build,
// RegistryService, GeneratorService, Service.Spec and WriteClientConfig. The subpackages are the
// stack's launchers, which chaos and the tests' fixtures (libs/testenv) use too: proc (build and
// run a program), dynalite (the DynamoDB stand-in, its tables made), fakenlb (the load
// balancer's stand-in) and cmdline (each service's command line).
package localstack

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/idgen/idgen/libs/localstack/cmdline"
	"github.com/idgen/idgen/libs/localstack/proc"
)

// Binary is a program the stack builds.
type Binary struct {
	Name string // its file name in the stack's bin directory
	Pkg  string // its package, relative to the repository root
}

// Binaries are the programs the stack builds, the services' and idgenctl, for the operator.
var Binaries = []Binary{
	{"registry", "./services/registry/cmd/registry"},
	{"generator", "./services/generator/cmd/generator"},
	{"public-id", "./services/public-id/cmd/public-id"},
	{"public-id-gateway", "./services/public-id/cmd/public-id-gateway"},
	{"demo-orders", "./examples/orders/cmd/demo-orders"}, // the demo orders upstream (examples/orders)
	{"idgenctl", "./tools/idgenctl"},
}

// The ports make run serves on (Options.FixedPorts), all on 127.0.0.1.
const (
	RegistryPort   = 7000
	GeneratorPort  = 7001 // the first generator's; the next ones count up (7002)
	PublicIDPort   = 7003
	GatewayPort    = 7004
	DemoOrdersPort = 7005
	GatewayOpsPort = 7006 // the gateway's /metrics and /healthz for the operator
)

// BinariesNamed returns the stack's Binaries of those names, in that order (nil for a name it
// does not build).
func BinariesNamed(names ...string) []Binary {
	var out []Binary
	for _, n := range names {
		for _, b := range Binaries {
			if b.Name == n {
				out = append(out, b)
			}
		}
	}
	return out
}

// FixedPorts lists make run's ports, in order.
var FixedPorts = []int{RegistryPort, GeneratorPort, GeneratorPort + 1, PublicIDPort, GatewayPort, DemoOrdersPort, GatewayOpsPort}

// Service is one process of the stack, resolved: what it runs, where it listens, how its health
// is checked and what must be healthy before it starts.
type Service struct {
	Name       string   // in messages and in its log's name (Name.log)
	Bin        string   // the Binary it runs
	Args       []string // its flags
	Addr       string   // host:port of its API
	HealthAddr string   // host:port of its /healthz and /metrics: Addr unless it has a health listener of its own
	Needs      []string // services that must be healthy before it starts
	Region     string   // a generator's region; "" for the others
	Gateway    string   // host:port of the customer gateway's customers' listener; "" for the others
}

// HealthURL is where the service's health is checked.
func (s Service) HealthURL() string { return "http://" + s.HealthAddr + "/healthz" }

// URL is the service's API over plaintext HTTP.
func (s Service) URL() string { return "http://" + s.Addr }

// Generator is one generator of the stack.
type Generator struct {
	Name       string // "": "generator-" + Region
	Region     string // required
	LeaseStore string // "": sqlite:State/leases-<Region>.db
	// Flags are its flags besides the stack's own (lease timings, --range, --region-number,
	// --registry-cache, …): the stack sets TLS, Schedule, Registry, Region, Listen and LeaseStore
	// (and, with MTLS, HealthListen and DeregistrationDelay).
	Flags cmdline.Generator
	Args  []string // flags after all the others (quotas, mTLS files)
	// MTLS runs it without --insecure-dev, Args carrying its certificate flags, with /healthz and
	// /metrics on a plaintext health listener of its own (--health-listen) and no deregistration
	// delay.
	MTLS bool
}

// DefaultGenerators are make run's: one generator in each of two regions, on SQLite lease tables.
var DefaultGenerators = []Generator{{Region: "us-east-1"}, {Region: "eu-west-1"}}

// Options change the stack from make run's. The zero value, with State set, is make run's stack
// on free ports.
type Options struct {
	Root       string // the repository; "": the nearest parent of the working directory holding go.work and package-lock.json
	State      string // required: databases, the gateway's routes, bin/ and logs/
	Logs       string // the processes' logs; "": State/logs
	FixedPorts bool   // make run's ports (FixedPorts); false: free loopback ports

	RegistryStore string      // "": sqlite:State/registry.db
	Generators    []Generator // nil: DefaultGenerators
	PublicIDStore string      // "": sqlite:State/public-ids.db, for the internal API and the gateway
	PublicIDArgs  []string    // flags after the public-ID internal API's own
	GatewayArgs   []string    // flags after the customer gateway's own
}

var errNoState = errors.New("localstack: Options.State is required")

// Plan resolves the description with o: every service, in start order, with its ports chosen.
// It writes the gateway's routes (deploy/local/routes.json, pointed at the demo orders'
// address) into State.
func Plan(o Options) ([]Service, error) {
	if o.State == "" {
		return nil, errNoState
	}
	root, err := o.root()
	if err != nil {
		return nil, err
	}
	gens := o.Generators
	if gens == nil {
		gens = DefaultGenerators
	}
	if len(gens) == 0 {
		return nil, errors.New("localstack: no generators")
	}
	if o.FixedPorts && len(gens) > PublicIDPort-GeneratorPort {
		return nil, fmt.Errorf("localstack: make run's ports hold %d generators, not %d", PublicIDPort-GeneratorPort, len(gens))
	}
	port := func(fixed int) (string, error) {
		if o.FixedPorts {
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(fixed)), nil
		}
		return freeAddr()
	}
	state := func(name string) string { return filepath.Join(o.State, name) }
	or := func(v, def string) string {
		if v != "" {
			return v
		}
		return def
	}

	// The registry: regions and the layout schedule, seeded with the five default regions.
	regAddr, err := port(RegistryPort)
	if err != nil {
		return nil, err
	}
	reg := RegistryService(regAddr, or(o.RegistryStore, "sqlite:"+state("registry.db")))
	out := []Service{reg}

	// The generators: schedule v2, regions from the registry, the clock check in warn mode (a
	// development machine's clock is not disciplined).
	demoRegion := "" // the demo orders' region: us-east-1 when a generator runs there, else the first generator's
	for i, g := range gens {
		if g.Region == "" {
			return nil, fmt.Errorf("localstack: generator %d has no region", i)
		}
		addr, err := port(GeneratorPort + i)
		if err != nil {
			return nil, err
		}
		if g.LeaseStore == "" {
			g.LeaseStore = "sqlite:" + state("leases-"+g.Region+".db")
		}
		s, err := GeneratorService(g, addr, reg)
		if err != nil {
			return nil, err
		}
		if g.Region == "us-east-1" {
			demoRegion = g.Region
		}
		out = append(out, s)
	}
	if demoRegion == "" {
		demoRegion = gens[0].Region
	}

	// The public-ID service: the internal API (publishes "ord" orders and "cus" customers) and
	// the customer gateway, a program of its own on the same store, whose routes front the demo
	// orders upstream: a customer asks for /orders/<public id> or /customers/<public id>/orders,
	// and every ID in the answer comes back as a public ID.
	pubAddr, err := port(PublicIDPort)
	if err != nil {
		return nil, err
	}
	gwAddr, err := port(GatewayPort)
	if err != nil {
		return nil, err
	}
	gwOps, err := port(GatewayOpsPort)
	if err != nil {
		return nil, err
	}
	demoAddr, err := port(DemoOrdersPort)
	if err != nil {
		return nil, err
	}
	routes, err := writeRoutes(root, state("routes.json"), demoAddr)
	if err != nil {
		return nil, err
	}
	pubStore := or(o.PublicIDStore, "sqlite:"+state("public-ids.db"))
	pub := Service{Name: "public-id", Bin: "public-id", Addr: pubAddr,
		Args: cmdline.PublicID{Listen: pubAddr, Store: pubStore, Resources: "ord,cus", Extra: o.PublicIDArgs}.Args()}
	out = append(out, pub)
	// No load balancer in front locally: a stop is at once.
	out = append(out, Service{Name: "public-id-gateway", Bin: "public-id-gateway", Addr: gwAddr, HealthAddr: gwOps, Gateway: gwAddr,
		Args: cmdline.Gateway{Listen: gwAddr, MetricsListen: gwOps, Store: pubStore, Routes: routes, DeregistrationDelay: "0",
			Extra: o.GatewayArgs}.Args()})

	// The demo orders upstream: orders keyed by internal IDs from its region's generators, then
	// its peer's, as the client config file (ClientConfigFile, written by Start with
	// WriteClientConfig from the topology's plan) lists them: a caller is never handed a
	// generator's address of its own. A checkout hands back only public IDs.
	out = append(out, Service{Name: "demo-orders", Bin: "demo-orders", Addr: demoAddr,
		Args: []string{"--listen", demoAddr, "--db", state("demo-orders.db"), "--client-config", ClientConfigFile(o.State),
			"--region", demoRegion, "--public-ids", pub.URL()}})

	for i := range out {
		if out[i].HealthAddr == "" {
			out[i].HealthAddr = out[i].Addr
		}
	}
	return out, nil
}

// RegistryService is the stack's registry on addr (host:port) with its store (sqlite:FILE, …),
// in development mode: regions and the layout schedule, seeded with the five default regions.
func RegistryService(addr, store string) Service {
	return Service{Name: "registry", Bin: "registry", Addr: addr, HealthAddr: addr,
		Args: cmdline.Registry{Listen: addr, Store: store}.Args()}
}

// GeneratorService is the generator g of a stack on addr (host:port), reading its regions from
// reg: schedule v2, the clock check in warn mode (a development machine's clock is not
// disciplined), g.LeaseStore (required here), then g.Flags and g.Args. With g.MTLS its /healthz
// and /metrics are on a free loopback port of their own, and it stops at once (no load balancer
// to wait for).
func GeneratorService(g Generator, addr string, reg Service) (Service, error) {
	if g.Region == "" || g.LeaseStore == "" {
		return Service{}, fmt.Errorf("localstack: generator %q: a region and a lease store are required", g.Name)
	}
	s := Service{Name: g.Name, Bin: "generator", Addr: addr, HealthAddr: addr, Needs: []string{reg.Name}, Region: g.Region}
	if s.Name == "" {
		s.Name = "generator-" + g.Region
	}
	c := g.Flags
	c.TLS, c.Schedule, c.Registry, c.Region, c.Listen, c.LeaseStore = g.MTLS, "v2", reg.URL(), g.Region, addr, g.LeaseStore
	c.Extra = append(slices.Clip(c.Extra), g.Args...)
	if g.MTLS {
		var err error
		if s.HealthAddr, err = freeAddr(); err != nil {
			return Service{}, err
		}
		c.HealthListen, c.DeregistrationDelay = s.HealthAddr, "0"
	}
	s.Args = c.Args()
	return s, nil
}

// Spec is the process of the service, run from the binary bin in the folder dir (the
// repository), its output in logs/NAME.log, healthy once its /healthz answers 200.
func (s Service) Spec(bin, dir, logs string) proc.Spec {
	return proc.Spec{Bin: bin, Args: s.Args, Dir: dir, Name: s.Name, Log: filepath.Join(logs, s.Name+".log"), HealthURL: s.HealthURL()}
}

// RegionAddrs returns, for each region of a plan's generators, the URL of its first generator:
// the local addresses a client config file gives the regions' callers.
func RegionAddrs(services []Service) map[string]string {
	addrs := map[string]string{}
	for _, s := range services {
		if s.Region != "" && addrs[s.Region] == "" {
			addrs[s.Region] = s.URL()
		}
	}
	return addrs
}

// GatewayAddr is the customer gateway's address in a plan (host:port).
func GatewayAddr(services []Service) string {
	for _, s := range services {
		if s.Gateway != "" {
			return s.Gateway
		}
	}
	return ""
}

// writeRoutes writes deploy/local/routes.json to path with its upstream pointed at demo, and
// returns path.
func writeRoutes(root, path, demo string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "deploy", "local", "routes.json"))
	if err != nil {
		return "", fmt.Errorf("localstack: the gateway's routes: %w", err)
	}
	b = bytes.ReplaceAll(b, []byte(net.JoinHostPort("127.0.0.1", strconv.Itoa(DemoOrdersPort))), []byte(demo))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, b, 0o644)
}

func (o Options) root() (string, error) {
	if o.Root != "" {
		return o.Root, nil
	}
	return proc.RepoRoot()
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr() (string, error) {
	port, err := proc.PickPort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}
