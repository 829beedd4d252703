package config_test

import (
	"bytes"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/internal/config"
)

// TestREADMEFlags: the service README's flags are the command's, with the command's defaults.
func TestREADMEFlags(t *testing.T) {
	var usage bytes.Buffer
	_, _ = config.Parse([]string{"--help"}, func(string) string { return "" }, &usage)
	testenv.CheckFlagDoc(t, usage.String(), "../../README.md")
}

// TestGatewayREADMEFlags: the gateway's README's flags are the gateway's, with its defaults.
func TestGatewayREADMEFlags(t *testing.T) {
	var usage bytes.Buffer
	_, _ = config.ParseGateway([]string{"--help"}, func(string) string { return "" }, &usage)
	testenv.CheckFlagDoc(t, usage.String(), "../../cmd/public-id-gateway/README.md")
}
