package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCalledVulns(t *testing.T) {
	stream := `{"config":{"scan_level":"symbol"}}
{"finding":{"osv":"GO-1","fixed_version":"v1.2.0","trace":[{"module":"example.com/a","package":"example.com/a","function":"F"}]}}
{"finding":{"osv":"GO-2","trace":[{"module":"example.com/b","package":"example.com/b"}]}}
{"finding":{"osv":"GO-3","trace":[{"module":"example.com/c"}]}}
{"finding":{"osv":"GO-1","fixed_version":"v1.2.0","trace":[{"module":"example.com/a","function":"G"}]}}`
	got, err := calledVulns(strings.NewReader(stream))
	if err != nil || len(got) != 1 || got[0].id != "GO-1" || got[0].fixed != "v1.2.0" {
		t.Fatalf("called: %+v %v (only GO-1 is called; GO-2 imported, GO-3 required)", got, err)
	}
}

func TestAllowNeedsAReason(t *testing.T) {
	p := filepath.Join(t.TempDir(), "allow.txt")
	if err := os.WriteFile(p, []byte("# c\nGO-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readAllow(p); err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("an exception without a reason: %v", err)
	}
	if err := os.WriteFile(p, []byte("GO-1 not used here\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if m, err := readAllow(p); err != nil || m["GO-1"] != "not used here" {
		t.Fatalf("%v %v", m, err)
	}
	// The shipped list parses, every line has a reason.
	if _, err := readAllow("allow.txt"); err != nil {
		t.Fatal(err)
	}
}
