package proc_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/idgen/idgen/libs/localstack/proc"
)

func TestBuildOncePerProcessAndTags(t *testing.T) {
	t.Setenv(proc.CacheEnv, t.TempDir())
	a := proc.BuildT(t, "./testdata/child")[0]
	b := proc.BuildT(t, "./testdata/child", "github.com/idgen/idgen/libs/localstack/proc/testdata/child")
	if b[0] != a || b[1] != a {
		t.Fatalf("the same package by folder and import path: %s, %v: want one binary", a, b)
	}
	tagged := proc.BuildWithT(t, proc.BuildOptions{Tags: []string{"proctest"}}, "./testdata/child")[0]
	if tagged == a {
		t.Fatalf("with build tags and without: one binary %s", a)
	}
	for bin, want := range map[string]string{a: "started tagged=false\n", tagged: "started tagged=true\n"} {
		p, err := proc.Start(context.Background(), proc.Spec{Bin: bin, Args: []string{"--exit", "0"}})
		if err != nil {
			t.Fatal(err)
		}
		_ = p.Wait()
		if !strings.HasPrefix(p.Tail(0), want) {
			t.Errorf("%s printed %q, want %q first", bin, p.Tail(0), want)
		}
	}
	for _, c := range []struct{ pkg, want string }{
		{"./testdata", "go list"},
		{"./testdata/...", "matches no package"}, // patterns leave testdata out
		{"github.com/idgen/idgen/libs/localstack/...", "several packages"},
		{".", "not a main package"},
	} {
		if _, err := proc.Build(context.Background(), c.pkg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Build(%q): %v, want an error saying %q", c.pkg, err, c.want)
		}
	}
}

// TestBuildAcrossProcesses: other processes sharing the cache folder (as the test binaries of one
// go test run do) find the binary up to date and leave it alone, and relink it once its sources
// change.
func TestBuildAcrossProcesses(t *testing.T) {
	cache, mod := t.TempDir(), t.TempDir()
	t.Setenv(proc.CacheEnv, cache)
	write := func(msg string) {
		t.Helper()
		for name, text := range map[string]string{
			"go.mod":  "module example.com/hello\n\ngo 1.26.0\n",
			"main.go": "package main\n\nfunc main() { println(\"" + msg + "\") }\n",
		} {
			if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	// buildElsewhere runs Build in another process and returns the binary and its inode.
	buildElsewhere := func() (string, uint64) {
		t.Helper()
		var out bytes.Buffer
		p, err := proc.Start(context.Background(), proc.Spec{Bin: os.Args[0], Args: []string{"-test.run=^TestHelperProcess$"},
			Env: []string{helperEnv + "=build", "PROC_TEST_DIR=" + mod, "GOWORK=off"}, Output: &out})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(); err != nil {
			t.Fatalf("build in another process: %v\n%s", err, out.String())
		}
		_, after, ok := strings.Cut(out.String(), "built ")
		if !ok {
			t.Fatalf("no binary built:\n%s", out.String())
		}
		bin := strings.Fields(after)[0]
		st, err := os.Stat(bin)
		if err != nil {
			t.Fatal(err)
		}
		return bin, st.Sys().(*syscall.Stat_t).Ino
	}
	run := func(bin string) string {
		t.Helper()
		p, err := proc.Start(context.Background(), proc.Spec{Bin: bin})
		if err != nil {
			t.Fatal(err)
		}
		_ = p.Wait()
		return p.Tail(0)
	}

	write("one")
	bin1, ino1 := buildElsewhere()
	if !strings.HasPrefix(bin1, cache) || run(bin1) != "one\n" {
		t.Fatalf("first build: %s prints %q", bin1, run(bin1))
	}
	bin2, ino2 := buildElsewhere()
	if bin2 != bin1 || ino2 != ino1 {
		t.Fatalf("a second process rebuilt an up-to-date binary: %s (inode %d), then %s (inode %d)", bin1, ino1, bin2, ino2)
	}
	write("two")
	bin3, ino3 := buildElsewhere()
	if bin3 != bin1 || ino3 == ino1 || run(bin3) != "two\n" {
		t.Fatalf("after a change: %s (inode %d, was %d) prints %q, want a new binary printing two", bin3, ino3, ino1, run(bin3))
	}
}
