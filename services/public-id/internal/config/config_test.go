package config_test

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/svc/flagenv"
	"github.com/idgen/idgen/libs/svc/storespec"
	"github.com/idgen/idgen/services/public-id/internal/config"
)

func TestEnvironmentFallbackAndFlagsWin(t *testing.T) {
	env := map[string]string{"IDGEN_LISTEN": "127.0.0.1:9999", "IDGEN_INSECURE_DEV": "true", "IDGEN_STORE": "rediss://:pw@127.0.0.1:6380",
		"IDGEN_REDIS_DURABILITY_CHECK": "2s"}
	c, err := config.Parse([]string{"--listen", "127.0.0.1:8888", "--redis-replicas", "1"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:8888" || !c.InsecureDev || c.RedisReplicas != 1 || c.RedisCheckEvery != 2*time.Second {
		t.Fatalf("config %+v", c)
	}
	if s, err := c.Spec(); err != nil || s.Kind != storespec.Redis || s.Where != "rediss://:pw@127.0.0.1:6380" {
		t.Fatalf("Spec() = %+v, %v", s, err)
	}
	genv := map[string]string{"IDGEN_IDS_SINCE": "2026-02-01", "IDGEN_TRUSTED_PROXIES": "10.0.0.0/8", "IDGEN_ROUTES": "routes.json", "IDGEN_STORE": "redis:127.0.0.1:6380"}
	g, err := config.ParseGateway([]string{"--listen", "127.0.0.1:8889"}, func(k string) string { return genv[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if g.Listen != "127.0.0.1:8889" || g.Routes != "routes.json" || !g.IDsSince.Equal(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)) || len(g.TrustedProxies) != 1 || g.MetricsListen != "127.0.0.1:7006" {
		t.Fatalf("gateway config %+v", g)
	}
	if s, err := g.Spec(); err != nil || s.Kind != storespec.Redis || s.Where != "127.0.0.1:6380" {
		t.Fatalf("gateway Spec() = %+v, %v", s, err)
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
		{"--insecure-dev with TLS settings", []string{"--insecure-dev", "--client-ca", "ca.pem"}, "exclude each other"},
		{"an unknown store", []string{"--insecure-dev", "--store", "memcached:127.0.0.1:11211"}, "want sqlite:PATH"},
		{"no DynamoDB table", []string{"--insecure-dev", "--store", "dynamodb:http://127.0.0.1:8000", "--dynamodb-table", ""}, "--dynamodb-table"},
		{"negative replicas", []string{"--insecure-dev", "--redis-replicas", "-1"}, "redis-replicas"},
		{"no durability check", []string{"--insecure-dev", "--redis-durability-check", "0s"}, "redis-durability-check"},
		{"replicas not a number", []string{"--insecure-dev", "--redis-replicas", "two"}, "redis-replicas"},
		{"negative drain", []string{"--insecure-dev", "--drain", "-1s"}, "drain"},
		{"a malformed origin", []string{"--insecure-dev", "--cors-origins", "app.example.com/x"}, "origins"},
		{"a leftover argument", []string{"--insecure-dev", "extra"}, "unexpected arguments"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := config.Parse(tt.args, none, io.Discard); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestGatewayRejected(t *testing.T) {
	none := func(string) string { return "" }
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no routes", []string{}, "--routes"},
		{"a bad date", []string{"--routes", "r.json", "--ids-since", "yesterday"}, "ids-since"},
		{"a bad proxy range", []string{"--routes", "r.json", "--trusted-proxies", "10.0.0.0/33"}, "trusted-proxies"},
		{"an unknown store", []string{"--routes", "r.json", "--store", "memcached:127.0.0.1:11211"}, "want sqlite:PATH"},
		{"no durability check", []string{"--routes", "r.json", "--redis-durability-check", "0s"}, "redis-durability-check"},
		{"an internal API flag", []string{"--routes", "r.json", "--callers", "callers.json"}, "callers"},
		{"a rate Redis that is not a Redis", []string{"--routes", "r.json", "--rate-redis", "sqlite:rates.db"}, "--rate-redis"},
		{"a rate Redis without a kind", []string{"--routes", "r.json", "--rate-redis", "127.0.0.1:6379"}, "--rate-redis"},
		{"a rate Redis CA without TLS", []string{"--routes", "r.json", "--rate-redis", "redis://127.0.0.1:6379", "--rate-redis-ca", "ca.pem"}, "rediss://"},
		{"a rate Redis CA without a rate Redis", []string{"--routes", "r.json", "--rate-redis-ca", "ca.pem"}, "name the server too"},
		{"no rate Redis timeout", []string{"--routes", "r.json", "--rate-redis", "redis:127.0.0.1:6379", "--rate-redis-timeout", "0s"}, "rate-redis-timeout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := config.ParseGateway(tt.args, none, io.Discard); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseGateway(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
}

// TestUsageNamesVariables: --help names every flag's IDGEN_* variable.
func TestUsageNamesVariables(t *testing.T) {
	t.Run("public-id", func(t *testing.T) {
		usageNamesVariables(t, func(w io.Writer) error {
			_, err := config.Parse([]string{"--help"}, func(string) string { return "" }, w)
			return err
		})
	})
	t.Run("public-id-gateway", func(t *testing.T) {
		usageNamesVariables(t, func(w io.Writer) error {
			_, err := config.ParseGateway([]string{"--help"}, func(string) string { return "" }, w)
			return err
		})
	})
}

func usageNamesVariables(t *testing.T, help func(io.Writer) error) {
	var out bytes.Buffer
	if err := help(&out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	flags := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if name, ok := strings.CutPrefix(line, "  -"); ok {
			name, _, _ = strings.Cut(name, " ")
			flags++
			if n := strings.Count(out.String(), "($"+flagenv.Name(name)+")"); n != 1 {
				t.Errorf("-%s: its variable named %d times", name, n)
			}
		}
	}
	// Every flag is in the README too (TestREADMEFlags), which keeps the list complete.
	if flags < 10 {
		t.Fatalf("%d flags in the usage:\n%s", flags, out.String())
	}
}
