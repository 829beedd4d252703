// Package config reads the generator's settings from flags, each with an IDGEN_* environment
// fallback (flag wins), and validates them before anything listens.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/flagenv"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/svc/storespec"
)

// Config is the generator's configuration. Defaults are in the flag definitions.
type Config struct {
	Listen         string
	HealthListen   string // plaintext /healthz and /metrics for load balancers and scrapers
	Region         string
	RegionNum      int    // -1: take the registry's
	Registry       string // URL or file; "" for the built-in default regions
	RegistryCache  string // the copy of the registry's last answer; "": beside the lease store (RegistryCachePath)
	RegistryMaxAge time.Duration
	RegistryPoll   time.Duration
	stateDir       string // systemd's $STATE_DIRECTORY (its first folder), for the copy's default
	LeaseStore     string // sqlite:PATH or dynamodb:ENDPOINT_URL
	Range          string
	Schedule       string
	Lease          time.Duration
	Renew          time.Duration
	FenceMargin    time.Duration
	ClockCheck     idcore.ClockCheck
	auth.Edge      // --callers, --tls-cert, --tls-key, --client-ca, --insecure-dev
	DevQuota       float64
	serve.Process  // --log-level, --deregistration-delay, --drain
	serve.Browsers // --cors-origins
	// Clock and ClockHealth replace the system clock and the kernel's clock health. Nil (the
	// defaults) in every build but one with the chaos tag (chaosclock.go).
	Clock       idcore.Clock
	ClockHealth idcore.HealthSource
}

// testFlags registers the options of test-only builds; it does nothing in a production build.
var testFlags = func(*flag.FlagSet, *Config) {}

// Parse reads args (without the program name) and the environment (getenv); the usage names each
// flag's environment variable.
func Parse(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("generator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:7001", "address for REST, Connect, gRPC, /healthz and /metrics")
	fs.StringVar(&c.HealthListen, "health-listen", "", "optional plaintext address serving only /healthz and /metrics (for NLB health checks, which present no client certificate)")
	fs.StringVar(&c.Region, "region", "us-east-1", "this generator's region name")
	fs.IntVar(&c.RegionNum, "region-number", -1, "expected region number; start-up fails if the registry says otherwise (-1: take the registry's)")
	fs.StringVar(&c.Registry, "registry", "", "registry URL or local registry file; empty: the built-in default regions")
	fs.StringVar(&c.RegistryCache, "registry-cache", "", "with a registry URL: the file keeping the regions last read from it, to start from while it is down; empty: regions.json beside a sqlite lease store, else in $STATE_DIRECTORY, else .idgen/regions.json; off: none")
	fs.DurationVar(&c.RegistryMaxAge, "registry-cache-max-age", 7*24*time.Hour, "the oldest copy of the regions a start may use while the registry is down")
	fs.DurationVar(&c.RegistryPoll, "registry-refresh", time.Minute, "how often a registry URL is read again (every 5s at most while it does not answer)")
	fs.StringVar(&c.LeaseStore, "lease-store", "sqlite:.idgen/leases.db", "sqlite:PATH or dynamodb:ENDPOINT_URL (AWS region and credentials from the standard chain)")
	fs.StringVar(&c.Range, "range", "service", "machine numbers to claim: service (0-63), embedded (64-) or A-B")
	fs.StringVar(&c.Schedule, "schedule", "v2", "layout schedule: v2 or v1-v2")
	fs.DurationVar(&c.Lease, "lease", 5*time.Minute, "lease length")
	fs.DurationVar(&c.Renew, "renew", 10*time.Second, "renewal interval")
	fs.DurationVar(&c.FenceMargin, "fence-margin", 5*time.Second, "no ID at or after lease expiry minus this")
	clock := "strict"
	fs.StringVar(&clock, "clock-check", "strict", "strict, or warn (development only: issue on an undisciplined clock)")
	c.Edge.RegisterFlags(fs, "callers file (JSON: trust domain, callers, quotas)", "plaintext with one default caller")
	fs.Float64Var(&c.DevQuota, "dev-quota", 0, "with --insecure-dev: the default caller's quota in IDs/s, 0 for none")
	c.Process.RegisterFlags(fs, 10*time.Second, serve.DefaultDeregistrationDelay)
	c.Browsers.RegisterFlags(fs)
	testFlags(fs, &c)

	if err := flagenv.Parse(fs, args, getenv); err != nil {
		return c, err
	}
	c.Process.DevDefaults(fs, getenv, c.InsecureDev)
	c.stateDir, _, _ = strings.Cut(getenv("STATE_DIRECTORY"), ":")
	var err error
	if c.ClockCheck, err = idcore.ParseClockCheck(clock); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks the combination of settings.
func (c Config) Validate() error {
	_, schedErr := idcore.ScheduleByName(c.Schedule)
	_, storeErr := c.LeaseStoreSpec()
	var errs []error
	var regErr error
	if c.RegistryMaxAge <= 0 || c.RegistryPoll <= 0 {
		regErr = fmt.Errorf("--registry-cache-max-age %v and --registry-refresh %v: want durations above 0", c.RegistryMaxAge, c.RegistryPoll)
	}
	for _, err := range []error{schedErr, storeErr, regErr, c.Edge.Check(), c.Process.Check()} {
		if err != nil {
			errs = append(errs, fmt.Errorf("config: %w", err))
		}
	}
	return errors.Join(errs...)
}

// LeaseStoreSpec returns --lease-store parsed: sqlite:PATH or dynamodb:ENDPOINT_URL.
func (c Config) LeaseStoreSpec() (storespec.Spec, error) {
	return storespec.Parse("--lease-store", c.LeaseStore, storespec.SQLite, storespec.DynamoDB)
}

// RegistryIsURL reports whether --registry is a registry service's URL (not a file, not the
// built-in regions): only then is there a registry that can be down.
func (c Config) RegistryIsURL() bool {
	return strings.HasPrefix(c.Registry, "http://") || strings.HasPrefix(c.Registry, "https://")
}

// RegistryCachePath returns the file the generator keeps its copy of the registry's last answer
// in: --registry-cache, or by default regions.json in the folder of a sqlite lease store (with
// the default store, .idgen/regions.json), else in $STATE_DIRECTORY (set by systemd's
// StateDirectory=), else .idgen/regions.json in the working directory. "" when there is none:
// --registry-cache off, or --registry not a URL.
func (c Config) RegistryCachePath() string {
	switch {
	case !c.RegistryIsURL() || c.RegistryCache == "off":
		return ""
	case c.RegistryCache != "":
		return c.RegistryCache
	}
	if spec, err := c.LeaseStoreSpec(); err == nil && spec.Kind == storespec.SQLite {
		return filepath.Join(filepath.Dir(spec.Where), "regions.json")
	}
	if c.stateDir != "" {
		return filepath.Join(c.stateDir, "regions.json")
	}
	return filepath.Join(".idgen", "regions.json")
}

// Getenv is os.Getenv, for main.
var Getenv = os.Getenv
