package proc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/localstack/proc"
)

// helperEnv makes the test binary, run again by a test, act as the helper TestHelperProcess names.
const helperEnv = "PROC_TEST_HELPER"

// freePort is a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := proc.PickPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// eventually waits until cond reports true, checking it every few milliseconds, and fails the
// test with cond's last status when timeout passes first. (The package's tests do not use
// libs/testenv's Eventually: libs/testenv requires this module, and a module's tests requiring
// a module that requires it would make a requirement cycle between the released libraries.)
func eventually(t *testing.T, timeout time.Duration, cond func() (ok bool, status string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, status := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// child builds testdata/child (once for the whole test binary).
func child(t *testing.T) string {
	t.Helper()
	return proc.BuildT(t, "./testdata/child")[0]
}

func TestStartWaitHealthyAndStop(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := proc.StartT(t, proc.Spec{Bin: child(t), Args: []string{"--listen", addr, "--healthy-after", "300ms"},
		HealthURL: "http://" + addr + "/healthz"})
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("StartT returned before /healthz answered 200: %s", resp.Status)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop of a process that exits 0 on SIGTERM: %v", err)
	}
	if !p.Exited() || p.ExitCode() != 0 || !strings.Contains(p.Tail(1), "terminating") {
		t.Fatalf("after Stop: exited %v, code %d, tail %q", p.Exited(), p.ExitCode(), p.Tail(1))
	}
}

func TestWaitHealthyOnTCPAndFunc(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	calls := 0
	p, err := proc.Start(context.Background(), proc.Spec{Bin: child(t), Args: []string{"--listen", addr},
		HealthAddr: addr, Health: func(context.Context) error {
			if calls++; calls < 3 {
				return errors.New("not yet")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if calls != 3 {
		t.Fatalf("the health func was called %d times, want 3 (healthy on the third)", calls)
	}
}

func TestWaitHealthyWhenTheProcessExits(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p, err := proc.Start(context.Background(), proc.Spec{Bin: child(t), Args: []string{"--lines", "3", "--exit", "3"},
		HealthURL: "http://" + addr + "/healthz"})
	if err != nil {
		t.Fatal(err)
	}
	// A minute: the error must come from the exit, well before.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = p.WaitHealthy(ctx)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "ended before it was healthy") ||
		!strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("WaitHealthy of a process that exits: %v (ctx %v)", err, ctx.Err())
	}
	if p.ExitCode() != 3 {
		t.Fatalf("exit code %d, want 3", p.ExitCode())
	}
	if got := p.Tail(2); got != "line 3\nexiting 3\n" {
		t.Fatalf("Tail(2) = %q", got)
	}
}

func TestWaitHealthyGivesUpWithContext(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := proc.StartT(t, proc.Spec{Bin: child(t), Args: []string{"--listen", addr, "--healthy-after", "1h"}})
	// The server answers (503) before the deadline starts: on a loaded machine a process can take
	// longer than the deadline to start listening, and WaitHealthy would then have no status to
	// report.
	eventually(t, 10*time.Second, func() (bool, string) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false, "the 503 server does not answer: " + err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable, "status " + resp.Status
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	q, err := proc.Start(ctx, proc.Spec{Bin: child(t), HealthURL: "http://" + addr + "/healthz"})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Kill()
	err = q.WaitHealthy(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("WaitHealthy on a server answering 503: %v, want the deadline and the last status", err)
	}
	if p.Exited() || q.Exited() {
		t.Fatal("a process ended while the test waited")
	}
}

func TestTailOfLogFileAndMemory(t *testing.T) {
	log := filepath.Join(t.TempDir(), "child.log")
	var out bytes.Buffer
	for _, spec := range []proc.Spec{
		{Log: log},
		{},
		{Output: &out},
		{Log: filepath.Join(t.TempDir(), "both.log"), Output: &out},
	} {
		spec.Bin, spec.Args = child(t), []string{"--lines", "100", "--exit", "0"}
		p, err := proc.Start(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if got, want := p.Tail(3), "line 99\nline 100\nexiting 0\n"; got != want {
			t.Errorf("Log %q, Output %v: Tail(3) = %q, want %q", spec.Log, spec.Output != nil, got, want)
		}
		if got := p.Tail(0); !strings.HasPrefix(got, "started tagged=false\n") || strings.Count(got, "\n") != 103 {
			t.Errorf("Tail(0) is not the whole output: %q", got)
		}
		if got := p.Tail(1000); got != p.Tail(0) {
			t.Errorf("Tail of more lines than there are: %q", got)
		}
	}
	b, _ := os.ReadFile(log)
	if !strings.HasSuffix(string(b), "line 100\nexiting 0\n") {
		t.Fatalf("the log file: %q", b)
	}
	if !strings.Contains(out.String(), "line 100\n") {
		t.Fatalf("Output got %q", out.String())
	}
}

func TestEnvAndDir(t *testing.T) {
	dir := t.TempDir()
	p, err := proc.Start(context.Background(), proc.Spec{Bin: child(t), Dir: dir, Env: []string{"PROC_TEST_VALUE=a", "PROC_TEST_VALUE=b"},
		Args: []string{"--env", "PROC_TEST_VALUE", "--exit", "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if out := p.Tail(0); !strings.Contains(out, "cwd "+dir+"\n") || !strings.Contains(out, "env PROC_TEST_VALUE=b\n") {
		t.Fatalf("output %q: want cwd %s and the later Env entry", out, dir)
	}
}

func TestSignalStopAndKill(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := proc.StartT(t, proc.Spec{Bin: child(t), Args: []string{"--listen", addr, "--ignore-term"}, HealthAddr: addr,
		Grace: 200 * time.Millisecond, Group: true})
	if err := p.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() (bool, string) {
		return strings.Contains(p.Tail(0), "got hangup"), "no SIGHUP in the output: " + p.Tail(3)
	})
	err := p.Stop()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("Stop of a process ignoring SIGTERM: %v, want killed after the grace", err)
	}
	if !strings.Contains(p.Tail(0), "got terminated") {
		t.Fatalf("it did not get SIGTERM first: %q", p.Tail(0))
	}
	if err := p.Signal(syscall.SIGHUP); !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("Signal after the end: %v, want os.ErrProcessDone", err)
	}
	if err := p.Kill(); err == nil {
		t.Fatal("Kill after the end returned nil, want Wait's error again")
	}

	q := proc.StartT(t, proc.Spec{Bin: child(t)})
	if err := q.Kill(); !errors.As(err, &exit) || q.ExitCode() != -1 {
		t.Fatalf("Kill: %v, exit code %d", err, q.ExitCode())
	}
}

// TestChildDiesWithParent: a parent process started with Start is killed with SIGKILL (it cannot
// stop its child); the child dies with it.
func TestChildDiesWithParent(t *testing.T) {
	parent := proc.StartT(t, proc.Spec{Bin: os.Args[0], Args: []string{"-test.run=^TestHelperProcess$"},
		Env: []string{helperEnv + "=parent", "PROC_TEST_CHILD=" + child(t)}})
	var pid int
	eventually(t, 30*time.Second, func() (bool, string) {
		_, after, ok := strings.Cut(parent.Tail(0), "child pid ")
		if ok {
			pid, _ = strconv.Atoi(strings.Fields(after)[0])
		}
		return pid > 0, "the parent did not print its child's pid: " + parent.Tail(5)
	})
	if !alive(pid) {
		t.Fatalf("child %d is not running before its parent dies", pid)
	}
	_ = parent.Kill()
	eventually(t, 10*time.Second, func() (bool, string) {
		return !alive(pid), fmt.Sprintf("child %d still runs after its parent was killed", pid)
	})
}

// alive reports whether pid runs (a zombie, dead but not yet reaped, does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z") && !strings.HasPrefix(after, "X")
}

// TestStartTPrintsTailOnFailure runs a failing test in a test binary of its own: its output holds
// the end of the process's log.
func TestStartTPrintsTailOnFailure(t *testing.T) {
	var out bytes.Buffer
	p, err := proc.Start(context.Background(), proc.Spec{Bin: os.Args[0], Args: []string{"-test.run=^TestHelperProcess$", "-test.v"},
		Env: []string{helperEnv + "=fail", "PROC_TEST_CHILD=" + child(t)}, Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err == nil {
		t.Fatalf("the failing test passed:\n%s", out.String())
	}
	for _, want := range []string{"--- FAIL: TestHelperProcess", "log, last 60 lines", "line 70\n", "exiting 0\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "line 10\n") {
		t.Errorf("output holds more than the last %d lines:\n%s", proc.TailLines, out.String())
	}
}

// TestHelperProcess is not a test: other tests run the test binary again to act as a process that
// starts children.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "":
		t.Skip("a helper for other tests")
	case "parent":
		p, err := proc.Start(context.Background(), proc.Spec{Bin: os.Getenv("PROC_TEST_CHILD")})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("child pid %d\n", p.Pid())
		_ = p.Wait()
		t.Fatal("the child ended before its parent")
	case "fail":
		p := proc.StartT(t, proc.Spec{Bin: os.Getenv("PROC_TEST_CHILD"), Args: []string{"--lines", "70", "--exit", "0"}})
		_ = p.Wait()
		t.Fatal("failing on purpose")
	case "build":
		bins, err := proc.BuildWith(context.Background(), proc.BuildOptions{Dir: os.Getenv("PROC_TEST_DIR")}, ".")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("built %s\n", bins[0])
	}
}
