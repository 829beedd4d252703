// Command runlocal is make run (scripts/run-local.sh builds it as .idgen/bin/run-local and runs
// it from the repository root): the local stack of package localstack (libs/localstack)
// on make run's ports, state under .idgen/ (IDGEN_RUN_STATE: another state folder, for tests),
// each run's logs in .idgen/logs/<start time>/ with .idgen/logs/latest pointing to the newest.
// Before it starts a process it writes .idgen/client_config.json, the endpoints of each region's
// callers (idclient.ReadClientConfig), from the topology module's plan (localstack.Start writes it
// with localstack.WriteClientConfig, the plan cached under .tools/topology) with the stack's generators, whose ports are make run's, in place of the regions' endpoints: the demo
// orders take their generators from it (--client-config, --region), so a plan that fails (no
// Terraform: make setup installs it) fails the run before anything starts.
//
// One stack per checkout: a second run says the first is running and changes nothing. Ctrl-C,
// SIGTERM or SIGHUP, or the end of the process that started it (make: a SIGTERM to make alone does
// not reach its children), stops every service, and the generators release their leases; a
// service that stops by itself, cleanly or by SIGINT or SIGTERM, stops the run too (exit 0). A
// service that cannot start, or exits otherwise, fails the run (exit 1) with its name, its exit
// status and the end of its log.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/idgen/idgen/libs/localstack"
)

func main() { os.Exit(run()) }

func say(format string, args ...any)  { fmt.Fprintf(os.Stdout, "run-local: "+format+"\n", args...) }
func fail(format string, args ...any) { fmt.Fprintf(os.Stderr, "run-local: "+format+"\n", args...) }

func run() int {
	wd, err := os.Getwd()
	if err != nil {
		fail("%v", err)
		return 1
	}
	state := os.Getenv("IDGEN_RUN_STATE")
	if state == "" {
		state = filepath.Join(wd, ".idgen")
	}
	for _, d := range []string{filepath.Join(state, "bin"), filepath.Join(state, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			fail("%v", err)
			return 1
		}
	}

	// One stack per checkout: the lock is held for as long as this process runs.
	lock, err := os.OpenFile(filepath.Join(state, "run.lock"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fail("%v", err)
		return 1
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid := "?"
		if b, err := os.ReadFile(filepath.Join(state, "run.pid")); err == nil {
			pid = strings.TrimSpace(string(b))
		}
		fail("a local stack is already running from this checkout (pid %s).", pid)
		fail("stop it first (Ctrl-C in its terminal, or kill -TERM that pid); nothing was changed.")
		return 1
	}
	if err := os.WriteFile(filepath.Join(state, "run.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		fail("%v", err)
		return 1
	}
	var busy []string
	for _, port := range localstack.FixedPorts {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second); err == nil {
			c.Close()
			busy = append(busy, strconv.Itoa(port))
		}
	}
	if len(busy) > 0 {
		fail("ports %s on 127.0.0.1 are in use by another process (another checkout's stack?); stop it first.", strings.Join(busy, " "))
		return 1
	}

	runID := time.Now().UTC().Format("20060102T150405Z")
	logs := filepath.Join(state, "logs", runID)
	if err := os.MkdirAll(logs, 0o755); err != nil {
		fail("%v", err)
		return 1
	}
	latest := filepath.Join(state, "logs", "latest")
	_ = os.Remove(latest)
	if err := os.Symlink(runID, latest); err != nil {
		fail("%v", err)
		return 1
	}

	// Ctrl-C reaches every process of the terminal's group, the services included: a stop, not a
	// failure (exit 0, leases released).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-sigs; cancel() }()

	s, err := localstack.Start(ctx, localstack.Options{Root: wd, State: state, Logs: logs, FixedPorts: true}, localstack.StartOptions{
		Bin: filepath.Join(state, "bin"),
		Built: func(b localstack.Binary, i, n int, took time.Duration) {
			say("building %-12s (%d/%d) %d s", b.Name, i, n, int(took.Seconds()))
		},
	})
	var se *localstack.StartError
	switch {
	case ctx.Err() != nil:
		fmt.Println()
		say("stopped")
		return 0
	case errors.As(err, &se) && se.Exited:
		fail("%s exited before it became ready; the end of %s:\n%s", se.Service.Name, se.Log, se.Tail)
		return 1
	case errors.As(err, &se):
		fail("%s did not become ready within %v (%s); the end of %s:\n%s", se.Service.Name, localstack.ReadyTimeout, se.Service.HealthURL(), se.Log, se.Tail)
		return 1
	case err != nil:
		fail("%v", err)
		return 1
	}
	stop := func() {
		fmt.Println()
		say("stopping (the generators release their leases)")
		s.Stop()
		say("stopped")
	}
	fmt.Print(s.Banner(".idgen/logs/" + runID + "/"))

	// Run until a service exits, a signal arrives or the process that started this one is gone.
	exited := s.Exited()
	parent := os.Getppid()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case e := <-exited:
			if e.Stopped() {
				say("%s was stopped", e.Service.Name)
				stop()
				return 0
			}
			fail("%s exited with status %d; the end of %s:\n%s", e.Service.Name, e.Status(), e.Proc.LogFile(), e.Proc.Tail(20))
			stop()
			return 1
		case <-ctx.Done():
			stop()
			return 0
		case <-tick.C:
			if os.Getppid() != parent {
				say("the process that started the stack is gone")
				stop()
				return 0
			}
		}
	}
}
