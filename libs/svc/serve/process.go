package serve

import (
	"errors"
	"flag"
	"time"

	"github.com/idgen/idgen/libs/svc/flagenv"
)

// DefaultDeregistrationDelay is --deregistration-delay's default: the deregistration_delay of
// the NLB target groups in infra/terraform/modules/fleet, which is also the longest their health
// check takes to see a 503 (interval × unhealthy threshold, 10 s × 3). A test holds them to it.
const DefaultDeregistrationDelay = 30 * time.Second

// Process holds the settings every service has, for Main and Serve: the log level, and how a
// graceful shutdown goes (Shutdown): how long the service serves on with its health draining
// (the deregistration delay), then how long it waits for requests in flight.
type Process struct {
	LogLevel            string
	DeregistrationDelay time.Duration
	Drain               time.Duration
}

// RegisterFlags adds --log-level, --deregistration-delay (default delay) and --drain (default
// drain) to fs.
func (p *Process) RegisterFlags(fs *flag.FlagSet, drain, delay time.Duration) {
	fs.StringVar(&p.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&p.DeregistrationDelay, "deregistration-delay", delay,
		"after SIGTERM, how long the API serves on with /healthz answering 503 draining and every response asking its client to close its connection, before the listener closes (0 with --insecure-dev unless set)")
	fs.DurationVar(&p.Drain, "drain", drain, "after the deregistration delay, how long requests in flight may take once the listener is closed")
}

// DevDefaults applies development mode's default (dev: --insecure-dev) once fs is parsed: no
// deregistration delay, unless --deregistration-delay was given on the command line or in the
// environment (getenv). A development stack has no load balancer to wait for, and Ctrl-C must
// stop it at once.
func (p *Process) DevDefaults(fs *flag.FlagSet, getenv func(string) string, dev bool) {
	if !dev || getenv(flagenv.Name("deregistration-delay")) != "" {
		return
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "deregistration-delay" })
	if !set {
		p.DeregistrationDelay = 0
	}
}

// Shutdown returns the shutdown the settings describe, draining h (nil: no health to drain).
func (p Process) Shutdown(h *Health) Shutdown {
	return Shutdown{Delay: p.DeregistrationDelay, Drain: p.Drain, Health: h}
}

// Check refuses a negative drain time or deregistration delay (Main checks the log level).
func (p Process) Check() error {
	var errs []error
	if p.Drain < 0 {
		errs = append(errs, errors.New("--drain is negative"))
	}
	if p.DeregistrationDelay < 0 {
		errs = append(errs, errors.New("--deregistration-delay is negative"))
	}
	return errors.Join(errs...)
}
