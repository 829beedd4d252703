package config_test

import (
	"io"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/registry/internal/config"
)

// TestDeregistrationDelayDefaults: 30 s (the NLB's deregistration_delay) with mutual TLS, 0 in
// development mode unless given.
func TestDeregistrationDelayDefaults(t *testing.T) {
	testenv.CheckDeregistrationDelay(t, serve.DefaultDeregistrationDelay, func(args []string, getenv func(string) string) (time.Duration, error) {
		cfg, err := config.Parse(args, getenv, io.Discard)
		if err != nil {
			return 0, err
		}
		return cfg.DeregistrationDelay, nil
	})
}
