package config_test

import (
	"io"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/services/public-id/internal/config"
)

// TestDeregistrationDelayDefaults: 30 s (the NLB's deregistration_delay) with mutual TLS, 0 in
// development mode unless given.
func TestDeregistrationDelayDefaults(t *testing.T) {
	tlsArgs := []string{"--tls-cert", "c.pem", "--tls-key", "k.pem", "--client-ca", "ca.pem", "--callers", "callers.json"}
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want time.Duration
	}{
		{tlsArgs, nil, serve.DefaultDeregistrationDelay},
		{[]string{"--insecure-dev"}, nil, 0},
		{[]string{"--insecure-dev", "--deregistration-delay", "2s"}, nil, 2 * time.Second},
		{[]string{"--insecure-dev"}, map[string]string{"IDGEN_DEREGISTRATION_DELAY": "5s"}, 5 * time.Second},
	} {
		cfg, err := config.Parse(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if cfg.DeregistrationDelay != tt.want {
			t.Errorf("%v %v: --deregistration-delay %v, want %v", tt.args, tt.env, cfg.DeregistrationDelay, tt.want)
		}
	}
}
