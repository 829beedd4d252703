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
	env := map[string]string{"IDGEN_PUBLIC_IDS": "http://pub:7003"}
	c, err := parseConfig([]string{"--generator", "http://a:7001,http://b:7002"}, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil || c.Generator != "http://a:7001,http://b:7002" || c.PublicIDs != "http://pub:7003" || c.Listen != "127.0.0.1:7005" {
		t.Fatalf("%+v %v", c, err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--generator", "http://a:7001,127.0.0.1:7002"}, `--generator "127.0.0.1:7002": want an http:// or https:// URL`},
		{[]string{"--public-ids", "ftp://x"}, `--public-ids "ftp://x"`},
		{[]string{"--db", ""}, "--db is empty"},
	} {
		if _, err := parseConfig(tt.args, func(string) string { return "" }, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.want)
		}
	}
}
