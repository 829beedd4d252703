package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/localstack/cmdline"
	"github.com/idgen/idgen/libs/localstack/proc"
)

// The operator faults: what an operator does to a group's store with idgenctl (quarantine and
// lift, the restore fence), and a process started with other lease rules than the table's.

// quarantineLift quarantines one of a group's numbers with idgenctl leases quarantine, then lifts
// it after 1 s to lease + 1 s.
type quarantineLift struct {
	group, pick int // pick: an index into the group's machine numbers
	dur         time.Duration
}

func (f *quarantineLift) Name() string { return "quarantine-lift" }

func (f *quarantineLift) plan(d *draw) time.Duration {
	f.group = d.group()
	f.pick = d.r.IntN(1 << 20)
	f.dur = d.between(time.Second, leaseLen+time.Second)
	return f.dur
}

func (f *quarantineLift) Inject(ctx context.Context, r *runner) (string, error) {
	g := r.groups[f.group]
	m := g.machines[f.pick%len(g.machines)]
	out, err := r.idgenctl(ctx, g, "quarantine", fmt.Sprint(m))
	if strings.Contains(out, "never claimed") {
		return fmt.Sprintf("%s number %d never claimed: skipped", g.name, m), nil
	}
	if err != nil {
		return "", err
	}
	sleep(ctx, f.dur)
	if _, err := r.idgenctl(ctx, g, "lift", fmt.Sprint(m)); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s number %d quarantined %s, lifted (idgenctl)", g.name, m, f.dur.Round(time.Millisecond)), nil
}

// fenceRestore runs idgenctl leases fence-restore on a group's store, with no lease flags: it
// reads the rules from the table.
type fenceRestore struct{ group int }

func (f *fenceRestore) Name() string { return "fence-restore" }

func (f *fenceRestore) plan(d *draw) time.Duration {
	f.group = d.group()
	return 2 * time.Second // the fence's own wait is not planned for
}

func (f *fenceRestore) Inject(ctx context.Context, r *runner) (string, error) {
	g := r.groups[f.group]
	out, err := r.idgenctl(ctx, g, "fence-restore")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: idgenctl: %s", g.name, lastLine(out)), nil
}

// otherRules starts one more generator on a group's store and first number with a lease twice
// the table's (its rules say leaseLen): it must refuse to start within 30 s, naming both values,
// and issue nothing; otherwise the run stops with an error.
type otherRules struct{ group int }

func (f *otherRules) Name() string { return "other-rules" }

func (f *otherRules) plan(d *draw) time.Duration {
	f.group = d.group()
	return 2 * time.Second
}

func (f *otherRules) Inject(ctx context.Context, r *runner) (string, error) {
	g := r.groups[f.group]
	port, err := proc.PickPort()
	if err != nil {
		return "", err
	}
	other := 2 * leaseLen
	p, err := proc.Start(ctx, proc.Spec{Bin: r.generator, Name: g.name + "/other-rules", Args: cmdline.Generator{
		ClockCheck: "strict", Listen: fmt.Sprintf("127.0.0.1:%d", port), LeaseStore: g.storeArg,
		Range: fmt.Sprintf("%d-%d", g.machines[0], g.machines[0]),
		Lease: other.String(), Renew: renew.String(), FenceMargin: margin.String()}.Args()})
	if err != nil {
		return "", err
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
	}
	exited := p.Exited()
	refused := exited && p.ExitCode() != 0
	_ = p.Kill()
	want := fmt.Sprintf("lease %v (the table's: %v)", other, leaseLen)
	switch {
	case !exited:
		return "", fmt.Errorf("%s: a generator with a %v lease on a table whose rules say %v did not refuse to start within 30 s:\n%s", g.name, other, leaseLen, p.Tail(0))
	case !refused || !strings.Contains(p.Tail(0), want):
		return "", fmt.Errorf("%s: a generator with a %v lease on a table whose rules say %v: %v, without naming both values (%q):\n%s", g.name, other, leaseLen, p.Wait(), want, p.Tail(0))
	}
	return fmt.Sprintf("%s: a generator with a %v lease refused to start: %s", g.name, other, want), nil
}

// ctlError is an idgenctl command that failed.
type ctlError struct{ msg string }

func (c ctlError) Error() string { return c.msg }

// ctlHasYes reports whether idgenctl's quarantine, lift and fence-restore ask for --yes.
func ctlHasYes(bin string) bool {
	out, _ := exec.Command(bin, "leases", "quarantine", "--help").CombinedOutput()
	return strings.Contains(string(out), "--yes") || strings.Contains(string(out), "-yes ")
}

// idgenctl runs idgenctl leases OP ARGS… against g's store, as an operator would, retrying while
// the store is coming back from a fault; it returns the output.
func (r *runner) idgenctl(ctx context.Context, g *group, op string, args ...string) (string, error) {
	argv := append([]string{"leases", op}, args...)
	// No lease or margin: lift and fence-restore read them from the table's rules.
	argv = append(argv, "--lease-store", g.storeArg, "--region", "us-east-1")
	if r.yes && op != "list" && op != "get" {
		argv = append(argv, "--yes")
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IDGEN_") {
			env = append(env, kv)
		}
	}
	for {
		cmd := exec.CommandContext(cctx, r.ctl, argv...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var xe *exec.ExitError
		if errors.As(err, &xe) && xe.ExitCode() == 2 { // usage: trying again will not help
			return string(out), ctlError{fmt.Sprintf("idgenctl %s: %v: %s", strings.Join(argv, " "), err, lastLine(string(out)))}
		}
		if err == nil || strings.Contains(string(out), "never claimed") || strings.Contains(string(out), "not quarantined") || cctx.Err() != nil {
			if err != nil {
				err = ctlError{fmt.Sprintf("idgenctl %s: %v: %s", strings.Join(argv, " "), err, lastLine(string(out)))}
			}
			return string(out), err
		}
		sleep(cctx, 300*time.Millisecond)
	}
}

// lastLine is the last line of idgenctl's output (its result).
func lastLine(out string) string {
	out = strings.TrimSpace(out)
	return out[strings.LastIndex(out, "\n")+1:]
}
