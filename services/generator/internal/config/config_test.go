package config_test

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/svc/flagenv"
	"github.com/idgen/idgen/services/generator/internal/config"
)

func TestEnvironmentFallbackAndFlagsWin(t *testing.T) {
	env := map[string]string{"IDGEN_LISTEN": "127.0.0.1:9999", "IDGEN_CLOCK_CHECK": "warn", "IDGEN_INSECURE_DEV": "true", "IDGEN_LEASE": "1m"}
	c, err := config.Parse([]string{"--listen", "127.0.0.1:8888", "--renew", "5s"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:8888" || c.ClockCheck != idcore.ClockWarn || !c.InsecureDev || c.Lease != time.Minute || c.Renew != 5*time.Second {
		t.Fatalf("config %+v", c)
	}
}

func TestRejected(t *testing.T) {
	none := func(string) string { return "" }
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"neither TLS nor --insecure-dev", []string{}, "mutual TLS needs"},
		{"--insecure-dev with a TLS certificate", []string{"--insecure-dev", "--tls-cert", "x"}, "exclude each other"},
		{"--insecure-dev with a client CA", []string{"--insecure-dev", "--client-ca", "ca.pem"}, "exclude each other"},
		{"unknown schedule", []string{"--insecure-dev", "--schedule", "v3"}, "v3"},
		{"a store leases cannot live in", []string{"--insecure-dev", "--lease-store", "redis:x"}, "--lease-store"},
		{"a lease store without a path", []string{"--insecure-dev", "--lease-store", "sqlite:"}, "--lease-store"},
		{"unknown clock check", []string{"--insecure-dev", "--clock-check", "off"}, "off"},
		{"negative drain", []string{"--insecure-dev", "--drain", "-1s"}, "--drain"},
		{"a copy of the regions never fresh enough", []string{"--insecure-dev", "--registry-cache-max-age", "0s"}, "--registry-cache-max-age"},
		{"a registry never read again", []string{"--insecure-dev", "--registry-refresh", "0s"}, "--registry-refresh"},
		{"a leftover argument", []string{"--insecure-dev", "extra"}, "unexpected arguments"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := config.Parse(tt.args, none, io.Discard); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestLeaseStoreSpec(t *testing.T) {
	c, err := config.Parse([]string{"--insecure-dev", "--lease-store", "dynamodb:http://127.0.0.1:8000"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c.LeaseStoreSpec(); err != nil || s.Kind != "dynamodb" || s.Where != "http://127.0.0.1:8000" {
		t.Fatalf("LeaseStoreSpec() = %+v, %v", s, err)
	}
}

// TestRegistryCachePath: with a registry URL the copy is beside a SQLite lease store, else in
// systemd's state folder, else in .idgen of the working directory, or where --registry-cache
// says; none when off or without a URL.
func TestRegistryCachePath(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		state string // $STATE_DIRECTORY
		want  string
	}{
		{[]string{"--registry", "http://r:7000"}, "", ".idgen/regions.json"},
		{[]string{"--registry", "https://r", "--lease-store", "dynamodb:https://dynamodb.eu-west-1.amazonaws.com"}, "/var/lib/idgen-generator:/var/lib/other", "/var/lib/idgen-generator/regions.json"},
		{[]string{"--registry", "https://r", "--lease-store", "sqlite:/var/lib/idgen/leases-eu-west-1.db"}, "/srv", "/var/lib/idgen/regions.json"},
		{[]string{"--registry", "https://r", "--lease-store", "dynamodb:https://dynamodb.eu-west-1.amazonaws.com"}, "", ".idgen/regions.json"},
		{[]string{"--registry", "https://r", "--registry-cache", "/srv/regions.json"}, "/var/lib/x", "/srv/regions.json"},
		{[]string{"--registry", "https://r", "--registry-cache", "off"}, "/var/lib/x", ""},
		{[]string{"--registry", "regions.json"}, "/var/lib/x", ""},
		{nil, "", ""},
	} {
		env := map[string]string{"STATE_DIRECTORY": tt.state}
		c, err := config.Parse(append([]string{"--insecure-dev"}, tt.args...), func(k string) string { return env[k] }, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.RegistryCachePath(); got != tt.want {
			t.Errorf("%q: the copy at %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestUsageNamesVariables: --help names every flag's IDGEN_* variable.
func TestUsageNamesVariables(t *testing.T) {
	var out bytes.Buffer
	if _, err := config.Parse([]string{"--help"}, func(string) string { return "" }, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	checkUsage(t, out.String())
}

// checkUsage checks that each flag of a usage text names its variable once.
func checkUsage(t *testing.T, usage string) {
	t.Helper()
	flags := 0
	for _, line := range strings.Split(usage, "\n") {
		name, ok := strings.CutPrefix(line, "  -")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, " ")
		flags++
		if n := strings.Count(usage, "($"+flagenv.Name(name)+")"); n != 1 {
			t.Errorf("-%s: its variable named %d times", name, n)
		}
	}
	if flags < 10 {
		t.Fatalf("%d flags in the usage:\n%s", flags, usage)
	}
}
