// Package config reads the generator's settings from flags, each with an IDGEN_* environment
// fallback (flag wins), and validates them before anything listens.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/flagenv"
	"github.com/idgen/idgen/libs/svc/serve"
)

// Config is the generator's configuration. Defaults are in the flag definitions.
type Config struct {
	Listen         string
	HealthListen   string // plaintext /healthz and /metrics for load balancers and scrapers
	Region         string
	RegionNum      int    // -1: take the registry's
	Registry       string // URL or file; "" for the built-in default regions
	LeaseStore     string // sqlite:PATH or dynamodb:ENDPOINT_URL
	Range          string
	Schedule       string
	Lease          time.Duration
	Renew          time.Duration
	FenceMargin    time.Duration
	ClockCheck     idcore.ClockCheck
	auth.Edge      // --callers, --tls-cert, --tls-key, --client-ca, --insecure-dev
	DevQuota       float64
	serve.Process  // --log-level, --drain
	serve.Browsers // --cors-origins
}

// Parse reads args (without the program name) and the environment (getenv).
func Parse(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("generator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	str := func(p *string, name, def, usage string) {
		fs.StringVar(p, name, def, usage+" ($"+flagenv.Name(name)+")")
	}
	dur := func(p *time.Duration, name string, def time.Duration, usage string) {
		fs.DurationVar(p, name, def, usage+" ($"+flagenv.Name(name)+")")
	}
	str(&c.Listen, "listen", "127.0.0.1:7001", "address for REST, Connect, gRPC, /healthz and /metrics")
	str(&c.HealthListen, "health-listen", "", "optional plaintext address serving only /healthz and /metrics (for NLB health checks, which present no client certificate)")
	str(&c.Region, "region", "us-east-1", "this generator's region name")
	fs.IntVar(&c.RegionNum, "region-number", -1, "expected region number; start-up fails if the registry says otherwise (-1: take the registry's) ($IDGEN_REGION_NUMBER)")
	str(&c.Registry, "registry", "", "registry URL or local registry file; empty: the built-in default regions")
	str(&c.LeaseStore, "lease-store", "sqlite:.idgen/leases.db", "sqlite:PATH or dynamodb:ENDPOINT_URL (AWS region and credentials from the standard chain)")
	str(&c.Range, "range", "service", "machine numbers to claim: service (0-63), embedded (64-) or A-B")
	str(&c.Schedule, "schedule", "v2", "layout schedule: v2 or v1-v2")
	dur(&c.Lease, "lease", 5*time.Minute, "lease length")
	dur(&c.Renew, "renew", 10*time.Second, "renewal interval")
	dur(&c.FenceMargin, "fence-margin", 5*time.Second, "no ID at or after lease expiry minus this")
	clock := "strict"
	str(&clock, "clock-check", "strict", "strict, or warn (development only: issue on an undisciplined clock)")
	c.Edge.RegisterFlags(fs, "callers file (JSON: trust domain, callers, quotas)", "plaintext with one default caller")
	fs.Float64Var(&c.DevQuota, "dev-quota", 0, "with --insecure-dev: the default caller's quota in IDs/s, 0 for none ($IDGEN_DEV_QUOTA)")
	c.Process.RegisterFlags(fs, 10*time.Second)
	c.Browsers.RegisterFlags(fs)

	if err := flagenv.Parse(fs, args, getenv); err != nil {
		return c, err
	}
	var err error
	if c.ClockCheck, err = idcore.ParseClockCheck(clock); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks the combination of settings.
func (c Config) Validate() error {
	var errs []error
	if _, err := idcore.ScheduleByName(c.Schedule); err != nil {
		errs = append(errs, err)
	}
	if kind, arg, ok := strings.Cut(c.LeaseStore, ":"); !ok || arg == "" || (kind != "sqlite" && kind != "dynamodb") {
		errs = append(errs, fmt.Errorf("config: --lease-store %q: want sqlite:PATH or dynamodb:ENDPOINT_URL", c.LeaseStore))
	}
	if c.InsecureDev && c.TLSSet() {
		errs = append(errs, errors.New("config: --insecure-dev and TLS settings exclude each other"))
	} else if err := c.Complete(); err != nil {
		errs = append(errs, fmt.Errorf("config: %w", err))
	}
	if err := c.Process.Check(); err != nil {
		errs = append(errs, fmt.Errorf("config: %w", err))
	}
	return errors.Join(errs...)
}

// Getenv is os.Getenv, for main.
var Getenv = os.Getenv
