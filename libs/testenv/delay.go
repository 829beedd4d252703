package testenv

import (
	"testing"
	"time"
)

// CheckDeregistrationDelay holds a service's --deregistration-delay to its defaults: tlsDefault
// (the NLB's deregistration_delay) with mutual TLS, 0 in development mode unless given by the
// flag or IDGEN_DEREGISTRATION_DELAY. parse is the service's configuration parser, returning the
// delay it chose for args and the environment getenv.
func CheckDeregistrationDelay(t *testing.T, tlsDefault time.Duration, parse func(args []string, getenv func(string) string) (time.Duration, error)) {
	t.Helper()
	tlsArgs := []string{"--tls-cert", "c.pem", "--tls-key", "k.pem", "--client-ca", "ca.pem", "--callers", "callers.json"}
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want time.Duration
	}{
		{tlsArgs, nil, tlsDefault},
		{[]string{"--insecure-dev"}, nil, 0},
		{[]string{"--insecure-dev", "--deregistration-delay", "2s"}, nil, 2 * time.Second},
		{[]string{"--insecure-dev"}, map[string]string{"IDGEN_DEREGISTRATION_DELAY": "5s"}, 5 * time.Second},
	} {
		got, err := parse(tt.args, func(k string) string { return tt.env[k] })
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if got != tt.want {
			t.Errorf("%v %v: --deregistration-delay %v, want %v", tt.args, tt.env, got, tt.want)
		}
	}
}
