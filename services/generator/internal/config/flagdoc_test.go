package config_test

import (
	"bytes"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/generator/internal/config"
)

// TestREADMEFlags: the README's flags are the command's, with the command's defaults.
func TestREADMEFlags(t *testing.T) {
	var usage bytes.Buffer
	_, _ = config.Parse([]string{"--help"}, func(string) string { return "" }, &usage)
	testenv.CheckFlagDoc(t, usage.String(), "../../README.md")
}
