package scan_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/idgen/idgen/services/public-id/internal/scan"
)

var update = flag.Bool("update", false, "write the table's list of spellings into the README")

const (
	readme      = "../../README.md"
	beginMarker = "<!-- spellings: generated from internal/scan's Table by `go generate ./internal/scan`; TestREADMESpellings checks it -->\n"
	endMarker   = "<!-- end of spellings -->\n"
)

// TestREADMESpellings: the README's list of the spellings the gateway refuses ("What the
// gateway refuses") is the table's, as Markdown renders it: a spelling added to the table is in
// the README, and the README names none the table does not have. With -update (go generate), the
// list is written in.
func TestREADMESpellings(t *testing.T) {
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i, j := strings.Index(text, beginMarker), strings.Index(text, endMarker)
	if i < 0 || j < i {
		t.Fatalf("%s: no list between %q and %q", readme, beginMarker, endMarker)
	}
	got, want := text[i+len(beginMarker):j], scan.Markdown()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(readme, []byte(text[:i+len(beginMarker)]+want+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the README's list of spellings is not the table's; run go generate ./internal/scan. README:\n%s\ntable:\n%s", got, want)
}
