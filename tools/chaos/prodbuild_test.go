package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
)

// TestProductionBuildLacksChaosClock: the clock option the chaos runner moves clocks with exists
// only in builds with the chaos tag. The generator built as it ships (no tag) has no
// --chaos-clock-file flag, and its usage does not mention it; the chaos build has it, so the
// test would notice the option moving. The same for the embedded node (idnode).
func TestProductionBuildLacksChaosClock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the generator twice")
	}
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pkgs := []string{"./services/generator/cmd/generator", "./libs/idcore/embedded/idnode"}
	plain := proc.BuildWithT(t, proc.BuildOptions{Dir: root}, pkgs...)
	chaos := proc.BuildWithT(t, proc.BuildOptions{Dir: root, Tags: []string{"chaos"}}, pkgs...)
	for _, b := range []struct {
		name, bin string
		want      bool
	}{
		{"generator", plain[0], false},
		{"generator-chaos", chaos[0], true},
		{"idnode", plain[1], false},
		{"idnode-chaos", chaos[1], true},
	} {
		usage, _ := exec.Command(b.bin, "--help").CombinedOutput()
		if !strings.Contains(string(usage), "-lease") {
			t.Fatalf("%s --help printed no usage:\n%s", b.name, usage)
		}
		if got := strings.Contains(string(usage), "chaos-clock-file"); got != b.want {
			t.Errorf("%s: --help mentions chaos-clock-file: %v, want %v\n%s", b.name, got, b.want, usage)
		}
		out, err := exec.Command(b.bin, "--chaos-clock-file", filepath.Join(dir, "clock")).CombinedOutput()
		if !b.want && (err == nil || !strings.Contains(string(out), "flag provided but not defined")) {
			t.Errorf("%s accepted --chaos-clock-file (%v):\n%s", b.name, err, out)
		}
	}
}
