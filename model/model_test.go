// Package model runs the Promela model of the lease protocol (lease.pml) with spin, gcc and pan:
// the shipped rules must verify with no error in every feature subset, and every variant must
// produce a counterexample.
package model

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// run is one pan search: the defines of lease.pml, and whether a counterexample is wanted.
type run struct {
	name    string
	defines []string
	// violate: the search must end with errors: 1 and a trail (a variant);
	// otherwise it must end with errors: 0 after searching every state.
	violate bool
}

// ciRuns are the searches make test runs: feature subsets small enough to search exhaustively
// (hash compaction aside) within seconds each. model/README.md says what each covers.
var ciRuns = []run{
	{"shipped/renew_loss", []string{"NO_RESTORE", "NO_QUARANTINE", "INCS=1", "NO_STEP"}, false},
	{"shipped/renew_loss_steps", []string{"NO_RESTORE", "NO_QUARANTINE", "INCS=1", "HORIZON=5", "NO_GIVE_UP"}, false},
	{"shipped/crash_release_steps", []string{"NO_RESTORE", "NO_QUARANTINE", "INCS=2", "NO_LOSS", "HORIZON=4"}, false},
	{"shipped/quarantine_lift_steps", []string{"NO_RESTORE", "INCS=1", "NO_LOSS", "HORIZON=5"}, false},
	{"shipped/restore_fence", []string{"NO_QUARANTINE", "INCS=1", "NO_LOSS", "NO_STEP", "HORIZON=5"}, false},
	{"shipped/mixed_rules", []string{"MIXED", "NO_RESTORE", "INCS=1", "NO_LOSS", "HORIZON=5"}, false},

	{"variant/FLOOR_AT_CLAIM", []string{"FLOOR_AT_CLAIM", "NO_RESTORE", "NO_QUARANTINE", "INCS=2", "NO_LOSS", "HORIZON=4"}, true},
	{"variant/FENCE_FROM_ARRIVAL", []string{"FENCE_FROM_ARRIVAL", "NO_RESTORE", "NO_QUARANTINE", "INCS=1", "NO_STEP"}, true},
	{"variant/RENEW_LOWER", []string{"RENEW_LOWER", "NO_RESTORE", "NO_QUARANTINE", "INCS=1", "NO_LOSS", "HORIZON=4"}, true},
	{"variant/RESTORE_NOFENCE", []string{"RESTORE_NOFENCE", "NO_QUARANTINE", "INCS=1", "NO_LOSS", "NO_STEP", "HORIZON=6"}, true},
	{"variant/LIFT_NOW", []string{"LIFT_NOW", "NO_RESTORE", "INCS=1", "NO_LOSS", "HORIZON=5"}, true},
	{"variant/FENCE_ROWS_ONLY", []string{"FENCE_ROWS_ONLY", "NO_QUARANTINE", "INCS=1", "NO_LOSS", "NO_STEP", "HORIZON=5"}, true},
	{"variant/NEW_IF_EMPTY", []string{"NEW_IF_EMPTY", "NO_QUARANTINE", "INCS=1", "NO_LOSS", "NO_STEP", "HORIZON=5"}, true},
	{"variant/RULES_UNCHECKED", []string{"RULES_UNCHECKED", "MIXED", "NO_RESTORE", "INCS=1", "NO_LOSS", "HORIZON=5"}, true},
	{"variant/OP_FLAGS", []string{"OP_FLAGS", "NO_RESTORE", "INCS=1", "NO_LOSS", "HORIZON=5"}, true},
}

// deepRuns are for make model-deep (IDGEN_MODEL_DEEP=1): every feature together (restore,
// quarantine, crash and release, lost replies, clock steps), with bitstate hashing (-DBITSTATE,
// 2^32 bits: 512 MiB a run). Not exhaustive: the full state space of all features together is
// beyond this machine (horizon 4 alone passes 5 x 10^7 states), so each run is bounded by a time
// limit (pan -Q, minutes) and reports how far it got; it finds errors, it proves nothing.
var deepRuns = []run{
	{"deep/all_features_h5", []string{"HORIZON=5"}, false},
	{"deep/all_features_h7", []string{"HORIZON=7"}, false},
}

// deepMinutes is each deep run's time limit; the two run side by side.
const deepMinutes = 12

func TestModel(t *testing.T) {
	need(t)
	for _, r := range ciRuns {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			search(t, r, false)
		})
	}
}

func TestModelDeep(t *testing.T) {
	if os.Getenv("IDGEN_MODEL_DEEP") == "" {
		t.Skip("make model-deep runs it (IDGEN_MODEL_DEEP=1)")
	}
	need(t)
	for _, r := range deepRuns {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			search(t, r, true)
		})
	}
}

func need(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"spin", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (make setup installs it): %v", tool, err)
		}
	}
}

var (
	reErrors = regexp.MustCompile(`errors: (\d+)`)
	reStored = regexp.MustCompile(`([\d.e+]+) states, stored`)
	reDepth  = regexp.MustCompile(`depth reached (\d+)`)
	reHash   = regexp.MustCompile(`hash factor: ([\d.e+]+)`)
)

// search compiles lease.pml with the run's defines in a temporary directory and runs pan.
func search(t *testing.T, r run, bitstate bool) {
	src, err := os.ReadFile("lease.pml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lease.pml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	var defs []string
	for _, d := range r.defines {
		defs = append(defs, "-D"+d)
	}
	start := time.Now()
	sh(t, dir, "spin", append(append([]string{"-a"}, defs...), "lease.pml")...)
	// Counterexamples are searched breadth-first (the shortest trail, found at once); the
	// shipped rules depth-first. HC4: hash compaction (4 bytes a state, a tiny chance of a missed
	// state, which pan reports); BITSTATE: the deep non-exhaustive pass.
	cflags := []string{"-O1", "-w", "-DSAFETY", "-o", "pan", "pan.c"}
	switch {
	case bitstate:
		cflags = append(cflags, "-DBITSTATE")
	case r.violate:
		cflags = append(cflags, "-DBFS", "-DHC4")
	default:
		cflags = append(cflags, "-DHC4")
	}
	sh(t, dir, "gcc", cflags...)
	compiled := time.Now()
	args := []string{"-E", "-m1000000"}
	if bitstate {
		args = append(args, "-w32", fmt.Sprintf("-Q%d", deepMinutes))
	}
	cmd := exec.Command("./pan", args...)
	cmd.Dir = dir
	outb, _ := cmd.CombinedOutput() // pan exits non-zero after a violation
	out := string(outb)
	m := reErrors.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("pan printed no error count:\n%s", out)
	}
	errs, _ := strconv.Atoi(m[1])
	states := ""
	if s := reStored.FindStringSubmatch(out); s != nil {
		states = s[1]
	}
	t.Logf("defines %s: errors: %d, %s states, compile %.1fs, search %.1fs", strings.Join(r.defines, " "),
		errs, states, compiled.Sub(start).Seconds(), time.Since(compiled).Seconds())
	if bitstate {
		depth, hash := "?", "?"
		if m := reDepth.FindStringSubmatch(out); m != nil {
			depth = m[1]
		}
		if m := reHash.FindStringSubmatch(out); m != nil {
			hash = m[1]
		}
		ended := "searched to the end"
		if strings.Contains(out, "Time limit of") {
			ended = fmt.Sprintf("stopped at its time limit (%d min)", deepMinutes)
		}
		t.Logf("bitstate: depth reached %s, hash factor %s, %s", depth, hash, ended)
	}
	if strings.Contains(out, "max search depth too small") {
		t.Errorf("the search was cut short by its depth limit (-m): raise it\n%s", out)
	}
	trail := filepath.Join(dir, "lease.pml.trail")
	if !r.violate {
		if errs != 0 {
			t.Errorf("the shipped rules violate the property:\n%s\n%s", out, replay(t, dir, defs))
		}
		return
	}
	if errs != 1 {
		t.Fatalf("want a counterexample (errors: 1), pan says errors: %d:\n%s", errs, out)
	}
	if _, err := os.Stat(trail); err != nil {
		t.Fatalf("pan reported a violation but left no trail: %v", err)
	}
	tr := replay(t, dir, defs)
	if !strings.Contains(tr, "assertion violated") {
		t.Fatalf("the trail does not end in the assertion:\n%s", tr)
	}
	t.Logf("counterexample:\n%s", summary(tr))
}

func sh(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// replay prints the trail pan left, step by step (spin -t -p).
func replay(t *testing.T, dir string, defs []string) string {
	if _, err := os.Stat(filepath.Join(dir, "lease.pml.trail")); err != nil {
		return "(no trail)"
	}
	cmd := exec.Command("spin", append(append([]string{"-t", "-p"}, defs...), "lease.pml")...)
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// summary keeps the steps of a trail that change the lease row, a holder's lease or what it
// issued, and true time.
var reKeep = regexp.MustCompile(`\[(T = |s_holder = |s_exp = |s_tid = |s_meta = |s_rules = |fence = |floor = |last = |restored = 1|fenced = 1|quarantined = 1|lifted = 1|w_ts = |assert)`)

func summary(trail string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(trail, "\n") {
		if reKeep.MatchString(line) || strings.Contains(line, "assertion violated") {
			f := strings.Fields(line)
			if i := strings.Index(line, "["); i >= 0 && len(f) >= 4 {
				fmt.Fprintf(&b, "  %s %s %s\n", f[2], f[3], line[i:])
			} else {
				fmt.Fprintf(&b, "  %s\n", strings.TrimSpace(line))
			}
		}
	}
	return b.String()
}
