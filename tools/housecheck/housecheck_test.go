package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// planted is a package that breaks both rules: a client config and a generator address by hand,
// and code that ships importing the tests' fixtures. The flag default and the line marked
// housecheck:allow are not findings.
const planted = `package planted

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"

	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/testenv"
)

var gen = flag.String("generator", "http://127.0.0.1:7001", "a program's own default")

// WriteByHand writes a client config for the local stack's callers by hand.
func WriteByHand(dir string) error {
	cc := idclient.ClientConfig{"us-east-1": {Endpoints: []string{"http://127.0.0.1:7001", "http://127.0.0.1:7002"}}}
	if _, err := json.Marshal(cc); err != nil {
		return err
	}
	return cc.WriteFile(filepath.Join(dir, "client_config.json"))
}

// SpellByHand writes one as JSON text.
func SpellByHand(path string) error {
	return os.WriteFile(path, []byte(` + "`" + `{"us-east-1": {"endpoints": ["http://localhost:7002"]}}` + "`" + `), 0o644)
}

func allowed() string {
	return "127.0.0.1:7001" // housecheck:allow: the planted exception
}

var _ = testenv.Root
var _ = allowed
`

func TestPlantedBreaches(t *testing.T) {
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("testdata", "planted")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "planted.go"), []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"-C", "../..", "./tools/housecheck/" + filepath.ToSlash(dir)}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("housecheck on the planted package: exit %d, want 1\n%s%s", code, stdout.String(), stderr.String())
	}
	t.Logf("the findings:\n%s", stdout.String())
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		_, rest, _ := strings.Cut(line, "planted.go:")
		lineNo, finding, _ := strings.Cut(rest, ": ")
		got = append(got, lineNo+" "+strings.SplitN(finding, ":", 3)[0]+": "+strings.TrimSpace(strings.SplitN(finding, ":", 3)[1]))
	}
	want := []string{
		"10 layers: github.com/idgen/idgen/tools/housecheck/" + filepath.ToSlash(dir) + " imports github.com/idgen/idgen/libs/testenv",
		"17 client-config: an idclient.ClientConfig literal",
		"18 client-config: a client config marshalled by hand (Marshal)",
		"21 client-config: a client config written by hand (ClientConfig.WriteFile)",
		"21 client-config: the client config's file spelled by hand (Join)",
		"26 client-config: a client config's JSON spelled by hand",
		"26 client-config: localhost",
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("no finding %q in:\n%s", w, stdout.String())
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d findings, want %d (the flag default and the allowed line are not findings):\n%s", len(got), len(want), stdout.String())
	}
}

// The stack's runtime and its fixtures hold the rules as they are.
func TestStackHolds(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-C", "../..", "./libs/localstack/...", "./libs/testenv/...", "./tools/runlocal/..."}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
}
