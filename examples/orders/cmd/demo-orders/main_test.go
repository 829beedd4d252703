package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
)

// TestREADMEFlags: the README's flags are the command's, with the command's defaults.
func TestREADMEFlags(t *testing.T) {
	var usage bytes.Buffer
	_, _ = parseConfig([]string{"--help"}, func(string) string { return "" }, &usage)
	testenv.CheckFlagDoc(t, usage.String(), "../../README.md")
}

func TestParseConfig(t *testing.T) {
	env := map[string]string{"IDGEN_PUBLIC_IDS": "http://pub:7003", "IDGEN_REGION": "eu-west-1"}
	c, err := parseConfig([]string{"--client-config", "/etc/idgen/client_config.json"}, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil || c.ClientConfig != "/etc/idgen/client_config.json" || c.Region != "eu-west-1" || c.PublicIDs != "http://pub:7003" ||
		c.Listen != "127.0.0.1:7005" {
		t.Fatalf("%+v %v", c, err)
	}
	env = map[string]string{"IDGEN_CLIENT_CONFIG": "/cc.json", "IDGEN_PUBLIC_IDS": "https://pub.internal"}
	if c, err := parseConfig([]string{"--region", "us-east-1"}, func(k string) string { return env[k] }, &bytes.Buffer{}); err != nil ||
		c.ClientConfig != "/cc.json" || c.Region != "us-east-1" {
		t.Fatalf("$IDGEN_CLIENT_CONFIG: %+v %v", c, err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--region is required"},
		{[]string{"--region", "us-east-1", "--client-config", ""}, "--client-config is empty"},
		// A list of generators of its own is no flag: the endpoints come from the client config.
		{[]string{"--region", "us-east-1", "--generator", "http://127.0.0.1:1"}, "flag provided but not defined: -generator"},
		{[]string{"--region", "us-east-1", "--public-ids", "ftp://x"}, `--public-ids "ftp://x"`},
		// No default public-ID service: a copy does not publish to a local port it was not given.
		{[]string{"--region", "us-east-1"}, "--public-ids is required"},
		{[]string{"--region", "us-east-1", "--db", ""}, "--db is empty"},
	} {
		if _, err := parseConfig(tt.args, func(string) string { return "" }, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.want)
		}
	}
}
