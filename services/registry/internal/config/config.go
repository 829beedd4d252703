// Package config reads the registry's settings from flags, each with an IDGEN_* environment
// fallback (flag wins), and validates them before anything listens.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/flagenv"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/svc/storespec"
)

// Config is the registry's configuration. Defaults are in the flag definitions.
type Config struct {
	Listen         string
	HealthListen   string // plaintext /healthz and /metrics for load balancers and scrapers
	Region         string // the home region: its name labels every idgen_* series
	Store          string // sqlite:PATH or dynamodb:ENDPOINT_URL
	Schedule       string // the layout schedule a new registry starts with
	auth.Edge             // --callers, --tls-cert, --tls-key, --client-ca, --insecure-dev
	serve.Process         // --log-level, --deregistration-delay, --drain
	serve.Browsers        // --cors-origins
}

// Parse reads args (without the program name) and the environment (getenv); the usage names each
// flag's environment variable.
func Parse(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("registry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:7000", "address for REST, Connect, gRPC, /healthz and /metrics")
	fs.StringVar(&c.HealthListen, "health-listen", "", "optional plaintext address serving only /healthz and /metrics (for NLB health checks, which present no client certificate)")
	fs.StringVar(&c.Region, "region", "us-east-1", "the registry's home region, named in the region label of every idgen_* series it exports")
	fs.StringVar(&c.Store, "store", "sqlite:.idgen/registry.db", "sqlite:PATH or dynamodb:ENDPOINT_URL (table idgen-regions)")
	fs.StringVar(&c.Schedule, "schedule", "v2", "layout schedule a new registry starts with: v2 or v1-v2")
	c.Edge.RegisterFlags(fs, "callers file; callers with \"admin\": true may change the registry", "plaintext; every request is the admin caller dev")
	c.Process.RegisterFlags(fs, 5*time.Second, serve.DefaultDeregistrationDelay)
	c.Browsers.RegisterFlags(fs)
	if err := flagenv.Parse(fs, args, getenv); err != nil {
		return c, err
	}
	c.Process.DevDefaults(fs, getenv, c.InsecureDev)
	return c, c.Validate()
}

// Validate checks the combination of settings.
func (c Config) Validate() error {
	_, schedErr := idcore.ScheduleByName(c.Schedule)
	_, storeErr := c.StoreSpec()
	var errs []error
	for _, err := range []error{schedErr, storeErr, c.Edge.Check(), c.Process.Check()} {
		if err != nil {
			errs = append(errs, fmt.Errorf("config: %w", err))
		}
	}
	return errors.Join(errs...)
}

// StoreSpec returns --store parsed: sqlite:PATH or dynamodb:ENDPOINT_URL.
func (c Config) StoreSpec() (storespec.Spec, error) {
	return storespec.Parse("--store", c.Store, storespec.SQLite, storespec.DynamoDB)
}

// Getenv is os.Getenv, for main.
var Getenv = os.Getenv
