package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReferences checks every reference in the repository: none to a file outside it, every
// docs/<page>.md#<section> reference and every relative Markdown link to an existing file and
// heading, and every page of docs/ linked from docs/README.md. Each failure is file:line: what.
func TestReferences(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// plant spells the planted problems so that this file does not contain them itself (the walk of
// the repository reads this file too).
var plant = strings.NewReplacer("DOCS/", "docs/", "{OUTSIDE}", "SPEC"+" §3", "{SHARED}", "../"+"shared/x")

// TestCheckFindsPlantedProblems runs the check on a small tree with one of each problem, and
// with references that are fine, and expects exactly the problems.
func TestCheckFindsPlantedProblems(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.work":          "go 1.26.0\n",
		"DOCS/README.md":   "# Index\n\n[a](a.md)\n",
		"DOCS/a.md":        "# A\n\n## The fence\n\n```\n## Not a heading\n```\n\n## The fence\n\n<a name=\"explicit\"></a>\n",
		"DOCS/unlinked.md": "# Unlinked\n",
		"lib/x.go": "package x\n" +
			"// fine: DOCS/a.md#the-fence, DOCS/a.md#the-fence-1, DOCS/a.md#explicit, DOCS/a.md\n" +
			"// DOCS/a.md#no-such-section\n" +
			"// DOCS/missing.md\n" +
			"// the rules of {OUTSIDE}\n",
		"runbooks/r.md": "# R\n\n" +
			"[fine](../DOCS/a.md#the-fence) [fine](#r) [fine](https://example.com/x.md#y) `[code](nowhere.md)`\n" +
			"[bad anchor](../DOCS/a.md#nope)\n" +
			"[escapes](../../elsewhere.md)\n" +
			"[missing](gone/README.md)\n" +
			"```\n[in a fence](nowhere.md)\n```\n" +
			"see {SHARED}\n",
		"lib/go.mod":         "module x\n\nreplace y => ../lib\nreplace z => ../../outside/z\n",
		"lib/t.tf":           "module \"m\" { source = \"../DOCS\" }\n",
		"Makefile":           "# {OUTSIDE}\n\tcd lib && go test ../../other/...\n",
		"notes.txt":          "{OUTSIDE}: not a checked kind of file\n",
		".git/config.go":     "// {OUTSIDE}\n",
		"node_modules/m.md":  "[x](nowhere.md)\n",
		".idgen/logs/a.json": "\"{SHARED}\"\n",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(plant.Replace(name)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(plant.Replace(body)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	problems, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Makefile:1: refers to",
		"DOCS/README.md:1: DOCS/unlinked.md is not linked from the index",
		`lib/go.mod:4: "../../outside/z" points outside the repository`,
		`lib/x.go:3: "DOCS/a.md#no-such-section": DOCS/a.md has no section #no-such-section (it has #a #explicit #the-fence #the-fence-1)`,
		`lib/x.go:4: "DOCS/missing.md": DOCS/missing.md does not exist`,
		"lib/x.go:5: refers to",
		`runbooks/r.md:4: "../DOCS/a.md#nope": DOCS/a.md has no section #nope`,
		`runbooks/r.md:5: "../../elsewhere.md" points outside the repository`,
		`runbooks/r.md:6: "gone/README.md": runbooks/gone/README.md does not exist`,
		"runbooks/r.md:10: refers to",
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if w := plant.Replace(want[i]); !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d:\n got  %s\n want %s…", i, got[i], w)
		}
	}
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"The fence", "the-fence"},
		{"State under `.idgen/`", "state-under-idgen"},
		{"Hosts: chrony", "hosts-chrony"},
		{"Claim / renew", "claim--renew"},
		{"Table identity and the restore fence", "table-identity-and-the-restore-fence"},
		{"The v1 to v2 cutover", "the-v1-to-v2-cutover"},
		{"snake_case and CamelCase", "snake_case-and-camelcase"},
		{"See [leases](leases.md)", "see-leases"},
		{"Région 2", "région-2"},
	} {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}
