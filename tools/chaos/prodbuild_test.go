package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
)

// TestProductionBuildLacksChaosClock: the clock option the chaos runner moves clocks with exists
// only in builds with the chaos tag. The generator built as it ships (no tag) has no
// --chaos-clock-file flag, and its usage does not mention it; the chaos build has it, so the
// test would notice the option moving.
func TestProductionBuildLacksChaosClock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the generator twice")
	}
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, b := range []struct {
		name, pkg string
		tags      []string
		want      bool
	}{
		{"generator", "./services/generator/cmd/generator", nil, false},
		{"generator-chaos", "./services/generator/cmd/generator", []string{"-tags", "chaos"}, true},
		{"idnode", "./libs/idcore/embedded/idnode", nil, false},
		{"idnode-chaos", "./libs/idcore/embedded/idnode", []string{"-tags", "chaos"}, true},
	} {
		bin := filepath.Join(dir, b.name)
		cmd := exec.Command("go", append(append([]string{"build", "-o", bin}, b.tags...), b.pkg)...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b.name, err, out)
		}
		usage, _ := exec.Command(bin, "--help").CombinedOutput()
		if !strings.Contains(string(usage), "-lease") {
			t.Fatalf("%s --help printed no usage:\n%s", b.name, usage)
		}
		if got := strings.Contains(string(usage), "chaos-clock-file"); got != b.want {
			t.Errorf("%s: --help mentions chaos-clock-file: %v, want %v\n%s", b.name, got, b.want, usage)
		}
		out, err := exec.Command(bin, "--chaos-clock-file", filepath.Join(dir, "clock")).CombinedOutput()
		if !b.want && (err == nil || !strings.Contains(string(out), "flag provided but not defined")) {
			t.Errorf("%s accepted --chaos-clock-file (%v):\n%s", b.name, err, out)
		}
	}
}
