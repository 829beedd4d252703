package config_test

import (
	"io"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
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
	for _, args := range [][]string{
		{},                                    // neither TLS nor --insecure-dev
		{"--insecure-dev", "--tls-cert", "x"}, // both
		{"--insecure-dev", "--schedule", "v3"},
		{"--insecure-dev", "--lease-store", "redis:x"},
		{"--insecure-dev", "--clock-check", "off"},
		{"--insecure-dev", "extra"},
	} {
		if _, err := config.Parse(args, none, io.Discard); err == nil {
			t.Errorf("Parse(%q) accepted", args)
		}
	}
}
