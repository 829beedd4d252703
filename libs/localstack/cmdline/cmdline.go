// Package cmdline builds the command lines of the services the local stack runs (the registry,
// the generator, the public-ID internal API and the customer gateway): one function per program,
// used by the stack's plan (libs/localstack), the game day, chaos and every test that starts one
// of them as a process, so that a flag renamed in a service is renamed in one place. Each
// builder spells only the flags its fields set, in a fixed order, then Extra.
package cmdline

// Registry is the registry's command line.
type Registry struct {
	Listen string // --listen host:port
	Store  string // --store (sqlite:FILE, dynamodb:…)
	// TLS runs it without --insecure-dev: Extra carries its certificate flags.
	TLS   bool
	Extra []string // after the flags above
}

// Args returns the registry's flags.
func (r Registry) Args() []string {
	var a args
	a.bool(!r.TLS, "--insecure-dev")
	a.str("--listen", r.Listen)
	a.str("--store", r.Store)
	return append(a, r.Extra...)
}

// Generator is the generator's command line.
type Generator struct {
	// TLS runs it without --insecure-dev: Extra carries its certificate flags (--tls-cert, …).
	TLS          bool
	ClockCheck   string // --clock-check; "": warn, for a development machine's clock
	Schedule     string // --schedule (v2, v1-v2)
	Registry     string // --registry URL
	Region       string // --region
	RegionNumber string // --region-number
	Listen       string // --listen host:port
	LeaseStore   string // --lease-store (sqlite:FILE, dynamodb:ENDPOINT)
	Range        string // --range (service, 3-3, …)
	// The lease timings: --lease, --renew, --fence-margin, --drain.
	Lease, Renew, FenceMargin, Drain string
	HealthListen                     string // --health-listen host:port
	DeregistrationDelay              string // --deregistration-delay
	RegistryCache                    string // --registry-cache FILE
	Extra                            []string
}

// Args returns the generator's flags.
func (g Generator) Args() []string {
	var a args
	a.bool(!g.TLS, "--insecure-dev")
	clock := g.ClockCheck
	if clock == "" {
		clock = "warn"
	}
	a.str("--clock-check", clock)
	a.str("--schedule", g.Schedule)
	a.str("--registry", g.Registry)
	a.str("--region", g.Region)
	a.str("--region-number", g.RegionNumber)
	a.str("--listen", g.Listen)
	a.str("--lease-store", g.LeaseStore)
	a.str("--range", g.Range)
	a.str("--lease", g.Lease)
	a.str("--renew", g.Renew)
	a.str("--fence-margin", g.FenceMargin)
	a.str("--drain", g.Drain)
	a.str("--health-listen", g.HealthListen)
	a.str("--deregistration-delay", g.DeregistrationDelay)
	a.str("--registry-cache", g.RegistryCache)
	return append(a, g.Extra...)
}

// PublicID is the public-ID internal API's command line (public-id).
type PublicID struct {
	TLS       bool   // without --insecure-dev: Extra carries its certificate flags
	Listen    string // --listen host:port
	Store     string // --store (sqlite:FILE, redis:ADDR, dynamodb:…, regions:FILE)
	Resources string // --resources (ord,cus)
	Extra     []string
}

// Args returns the public-ID internal API's flags.
func (p PublicID) Args() []string {
	var a args
	a.bool(!p.TLS, "--insecure-dev")
	a.str("--listen", p.Listen)
	a.str("--store", p.Store)
	a.str("--resources", p.Resources)
	return append(a, p.Extra...)
}

// Gateway is the customer gateway's command line (public-id-gateway).
type Gateway struct {
	Listen              string // --listen host:port, the customers' listener
	MetricsListen       string // --metrics-listen host:port, /metrics and /healthz
	Store               string // --store, the internal API's
	Routes              string // --routes FILE
	DeregistrationDelay string // --deregistration-delay ("0" with no load balancer in front)
	Extra               []string
}

// Args returns the customer gateway's flags.
func (g Gateway) Args() []string {
	var a args
	a.str("--listen", g.Listen)
	a.str("--metrics-listen", g.MetricsListen)
	a.str("--store", g.Store)
	a.str("--routes", g.Routes)
	a.str("--deregistration-delay", g.DeregistrationDelay)
	return append(a, g.Extra...)
}

type args []string

func (a *args) str(flag, v string) {
	if v != "" {
		*a = append(*a, flag, v)
	}
}

func (a *args) bool(on bool, flag string) {
	if on {
		*a = append(*a, flag)
	}
}
