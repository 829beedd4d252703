package proc

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TailLines is how many lines of a process's log StartT prints when its test failed.
const TailLines = 60

// BuildT is Build for tests: it fails the test when a package does not build.
func BuildT(t testing.TB, pkgs ...string) []string {
	t.Helper()
	return BuildWithT(t, BuildOptions{}, pkgs...)
}

// BuildWithT is BuildWith for tests: it fails the test when a package does not build.
func BuildWithT(t testing.TB, o BuildOptions, pkgs ...string) []string {
	t.Helper()
	bins, err := BuildWith(context.Background(), o, pkgs...)
	if err != nil {
		t.Fatal(err)
	}
	return bins
}

// StartT starts the process for a test and, when the Spec has health checks, waits up to
// Spec.HealthTimeout (60 s by default) for it to pass them. Without Log or Output, its output goes
// to NAME.log in a folder of the test's. The test fails when the process does not start, or ends or
// stays unhealthy, printing the end of its log. When the test ends the process is killed (a test
// that checks a graceful stop calls Stop itself) and, if the test failed, the last TailLines lines
// of its log are printed.
func StartT(t testing.TB, spec Spec) *Proc {
	t.Helper()
	if spec.Log == "" && spec.Output == nil {
		name := spec.Name
		if name == "" {
			name = filepath.Base(spec.Bin)
		}
		spec.Log = filepath.Join(t.TempDir(), name+".log")
	}
	p, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Kill()
		if t.Failed() {
			t.Logf("%s (pid %d) log, last %d lines:\n%s", p.Name(), p.Pid(), TailLines, p.Tail(TailLines))
		}
	})
	if spec.HealthURL == "" && spec.HealthAddr == "" && spec.Health == nil {
		return p
	}
	timeout := spec.HealthTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := p.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	return p
}
