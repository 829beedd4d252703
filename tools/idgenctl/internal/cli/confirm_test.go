package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
	"github.com/idgen/idgen/tools/idgenctl/internal/cli"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// testRules are the rules of the tables sqliteStore makes: a 1-minute lease, a 1 s margin.
var testRules = lease.DefaultRules(time.Minute, 0, time.Second)

// sqliteStore makes a lease table in a SQLite file, with the rules testRules written as leases
// init writes them, and returns its --lease-store and the store.
func sqliteStore(t *testing.T) (string, lease.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "leases-us-east-1.db")
	st, err := sqlitelease.Open(context.Background(), path, lease.TableV2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := lease.InitTable(context.Background(), st, testRules, time.Now(), "test"); err != nil {
		t.Fatal(err)
	}
	return "sqlite:" + path, st
}

// claim claims a number for holder until expiry, with its history event, as a generator does.
func claim(t *testing.T, st lease.Store, m int, holder string, now, expiry time.Time) lease.Row {
	t.Helper()
	ctx := context.Background()
	r, err := st.Claim(ctx, m, holder, now.UnixMilli(), expiry.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AppendHistory(ctx, lease.Event{Machine: m, AtUnixMs: now.UnixMilli(), Kind: lease.KindClaim, Holder: holder, Epoch: r.Epoch, ExpiryUnixMs: r.ExpiryUnixMs}); err != nil {
		t.Fatal(err)
	}
	return r
}

// runTerminal runs idgenctl as on a terminal answering answer; it returns the exit code, stdout
// and stderr.
func runTerminal(t *testing.T, answer string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.RunTerminal(context.Background(), args, strings.NewReader(answer), &out, &errb, func(string) string { return "" })
	return code, out.String(), errb.String()
}

func runEnv(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), args, &out, &errb, func(k string) string { return env[k] })
	return code, out.String() + errb.String()
}

func lastEvent(t *testing.T, st lease.Store, m int) lease.Event {
	t.Helper()
	evs, err := st.History(context.Background(), m, 0, time.Now().Add(time.Minute).UnixMilli())
	if err != nil || len(evs) == 0 {
		t.Fatalf("history of %d: %v %v", m, evs, err)
	}
	return evs[len(evs)-1]
}

// TestQuarantineAndLiftAsk: a quarantine or lift says what it changes, asks on a terminal, is
// refused without one unless --yes, and writes its history event.
func TestQuarantineAndLiftAsk(t *testing.T) {
	ctx := context.Background()
	store, st := sqliteStore(t)
	now := time.Now()
	held := claim(t, st, 3, "gen-a/pid-1/1", now, now.Add(time.Minute))

	code, out := run(t, "leases", "quarantine", "3", "--lease-store", store)
	if code != 2 || !strings.Contains(out, "pass --yes") || !strings.Contains(out, "held by a live generator: gen-a/pid-1/1") ||
		!strings.Contains(out, "holder gen-a/pid-1/1 -> QUARANTINED\n") || !strings.Contains(out, "epoch 1 -> 2\n") {
		t.Fatalf("quarantine without a terminal: %d\n%s", code, out)
	}
	// --yes must be typed: IDGEN_YES does not answer.
	if code, out := runEnv(t, map[string]string{"IDGEN_YES": "true"}, "leases", "quarantine", "3", "--lease-store", store); code != 2 {
		t.Fatalf("quarantine with IDGEN_YES: %d\n%s", code, out)
	}
	for _, answer := range []string{"n\n", "", "maybe\n"} {
		code, stdout, stderr := runTerminal(t, answer, "leases", "quarantine", "3", "--lease-store", store)
		if code != 1 || stdout != "" || !strings.Contains(stderr, "Proceed? [y/N]") || !strings.Contains(stderr, "not confirmed") {
			t.Fatalf("quarantine answered %q: %d\n%s%s", answer, code, stdout, stderr)
		}
	}
	if r, _ := st.Get(ctx, 3); r != held {
		t.Fatalf("a refused quarantine changed the row: %+v", r)
	}

	code, stdout, stderr := runTerminal(t, "y\n", "leases", "quarantine", "3", "--lease-store", store)
	if code != 0 || !strings.Contains(stdout, "3        quarantined  QUARANTINED  2") || !strings.Contains(stderr, "leases quarantine 3 will:") {
		t.Fatalf("quarantine confirmed: %d\n%s%s", code, stdout, stderr)
	}
	if ev := lastEvent(t, st, 3); ev.Kind != lease.KindQuarantine || ev.Epoch != 2 || ev.Holder != lease.QuarantineHolder {
		t.Fatalf("quarantine history: %+v", ev)
	}

	if code, out := run(t, "leases", "lift", "3", "--lease-store", store); code != 2 || !strings.Contains(out, "pass --yes") {
		t.Fatalf("lift without a terminal: %d\n%s", code, out)
	}
	code, stdout, stderr = runTerminal(t, "yes\n", "leases", "lift", "3", "--lease-store", store)
	if code != 0 || !strings.Contains(stdout, "3        lifted  LIFTED  3") || !strings.Contains(stderr, "holder QUARANTINED -> LIFTED\n") || !strings.Contains(stderr, "epoch 2 -> 3\n") {
		t.Fatalf("lift confirmed: %d\n%s%s", code, stdout, stderr)
	}
	if ev := lastEvent(t, st, 3); ev.Kind != lease.KindLift || ev.Epoch != 3 {
		t.Fatalf("lift history: %+v", ev)
	}
	// Nothing to lift: said before anything is asked.
	if code, stdout, stderr := runTerminal(t, "y\n", "leases", "lift", "3", "--lease-store", store); code != 1 || !strings.Contains(stderr, "not quarantined") || strings.Contains(stderr, "Proceed") {
		t.Fatalf("lift of a lifted number: %d\n%s%s", code, stdout, stderr)
	}

	// A number never claimed: the quarantine creates its row, and says so. Flags come anywhere.
	code, out = run(t, "--yes", "--lease-store", store, "leases", "quarantine", "7")
	if code != 0 || !strings.Contains(out, "it has no row (never claimed)") || !strings.Contains(out, "7        quarantined") || strings.Contains(out, "live generator") {
		t.Fatalf("quarantine of an unclaimed number: %d\n%s", code, out)
	}
	if code, out := run(t, "leases", "-y", "quarantine", "8", "--lease-store", store); code != 0 {
		t.Fatalf("--yes between the words: %d\n%s", code, out)
	}
}

// TestRulesLiveInTheTable: leases init writes the table's rules once; lift, fence-restore and
// quarantine take no lease flags and use the table's rules (a lift on a table whose rules say 20
// minutes makes the number claimable 20 minutes and the margin later); set-rules asks, and is
// refused while a number is held.
func TestRulesLiveInTheTable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "leases-us-east-1.db")
	st, err := sqlitelease.Open(ctx, path, lease.TableV2)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	store := "sqlite:" + path
	if code, out := run(t, "leases", "init", "--lease-store", store); code != 2 || !strings.Contains(out, "--lease D and --margin D") {
		t.Fatalf("init without rules: %d\n%s", code, out)
	}
	m := jsonOf(t, mustRun(t, "leases", "init", "--lease", "20m", "--margin", "5s", "--lease-store", store, "--output", "json"))
	if r, _ := m["rules"].(map[string]any); r["lease"] != "20m0s" || r["margin"] != "5s" || r["renew_min"] != "40s" || r["renew_max"] != "6m40s" || m["restored"] != false {
		t.Fatalf("init: %v", m)
	}
	mustRun(t, "leases", "init", "--lease", "20m", "--margin", "5s", "--lease-store", store) // the same again: nothing changes
	if code, out := run(t, "leases", "init", "--lease", "5m", "--margin", "5s", "--lease-store", store); code != 1 || !strings.Contains(out, "set-rules") {
		t.Fatalf("init with other rules: %d\n%s", code, out)
	}
	if out := mustRun(t, "leases", "list", "--lease-store", store); !strings.Contains(out, "rules: lease 20m0s, renew 40s-6m40s, fence margin 5s") {
		t.Fatalf("leases list shows no rules:\n%s", out)
	}
	now := time.Now()
	claim(t, st, 3, "gen-a/pid-1/1", now, now.Add(20*time.Minute))
	if code, out := run(t, "leases", "quarantine", "3", "--lease-store", store); code != 2 || !strings.Contains(out, "one lease (20m0s) and the margin (5s) of the table's rules") {
		t.Fatalf("quarantine's plan: %d\n%s", code, out)
	}
	mustRun(t, "leases", "quarantine", "3", "--lease-store", store, "--yes")
	if code, out := run(t, "leases", "lift", "3", "--lease", "5m", "--lease-store", store, "--yes"); code != 2 || !strings.Contains(out, "unknown flag: --lease") {
		t.Fatalf("lift with a lease flag: %d\n%s", code, out)
	}
	before := time.Now()
	m = jsonOf(t, mustRun(t, "leases", "lift", "3", "--lease-store", store, "--output", "json", "--yes"))
	after := time.Now()
	exp := int64(m["lease_expiry_unix_ms"].(float64))
	if exp < before.Add(20*time.Minute+5*time.Second).UnixMilli() || exp > after.Add(20*time.Minute+5*time.Second).UnixMilli() {
		t.Fatalf("lift set the expiry to %v, want the table's 20 min and 5 s from the lift", m["lease_expiry"])
	}
	// Unclaimable until then: a claimer 19 minutes on (far past a 5-minute default) is refused.
	if _, err := st.Claim(ctx, 3, "gen-b/pid-2/2", after.Add(19*time.Minute).UnixMilli(), after.Add(40*time.Minute).UnixMilli()); !errors.Is(err, lease.ErrTaken) {
		t.Fatalf("a claim 19 minutes after the lift: %v, want ErrTaken", err)
	}

	// set-rules: refused while a number is held (the lifted row's expiry is in the future too).
	claim(t, st, 4, "gen-c/pid-3/3", now, now.Add(20*time.Minute))
	if code, out := run(t, "leases", "set-rules", "--lease", "5m", "--margin", "5s", "--lease-store", store, "--yes"); code != 2 || !strings.Contains(out, "--region R") {
		t.Fatalf("set-rules without --region: %d\n%s", code, out)
	}
	if code, out := run(t, "leases", "set-rules", "--lease", "5m", "--margin", "5s", "--region", "us-east-1", "--lease-store", store); code != 2 || !strings.Contains(out, "pass --yes") ||
		!strings.Contains(out, "from lease 20m0s") || !strings.Contains(out, "to   lease 5m0s") {
		t.Fatalf("set-rules without --yes: %d\n%s", code, out)
	}
	if code, out := run(t, "leases", "set-rules", "--lease", "5m", "--margin", "5s", "--region", "us-east-1", "--lease-store", store, "--yes"); code != 1 || !strings.Contains(out, "numbers are held") || !strings.Contains(out, "4 (gen-c/pid-3/3") {
		t.Fatalf("set-rules while numbers are held: %d\n%s", code, out)
	}
	for _, n := range []int{3, 4} {
		r, _ := st.Get(ctx, n)
		if _, err := st.Quarantine(ctx, n); err != nil || r.Machine != n {
			t.Fatal(err)
		}
	}
	if out := mustRun(t, "leases", "set-rules", "--lease", "5m", "--margin", "5s", "--region", "us-east-1", "--lease-store", store, "--yes"); !strings.Contains(out, "are now lease 5m0s, renew 10s-1m40s, fence margin 5s") {
		t.Fatalf("set-rules with no number held:\n%s", out)
	}
	if meta, err := st.Meta(ctx); err != nil || meta.Rules != lease.DefaultRules(5*time.Minute, 0, 5*time.Second) {
		t.Fatalf("the table's rules after set-rules: %+v, %v", meta, err)
	}
}

// TestFenceRestore: the fence needs --region on the command line, says what it fences, and
// leases list and get show the fenced rows as fenced until their expiry.
func TestFenceRestore(t *testing.T) {
	ctx := context.Background()
	store, st := sqliteStore(t)
	now := time.Now()
	claim(t, st, 3, "gen-a/pid-1/1", now, now.Add(time.Minute))
	claim(t, st, 4, "gen-b/pid-2/2", now.Add(-time.Hour), now.Add(-time.Hour+time.Minute))
	if _, err := st.Quarantine(ctx, 5); err != nil {
		t.Fatal(err)
	}

	if code, out := run(t, "leases", "fence-restore", "--yes", "--lease-store", store); code != 2 || !strings.Contains(out, "--region R") {
		t.Fatalf("fence-restore without --region: %d\n%s", code, out)
	}
	if code, out := runEnv(t, map[string]string{"IDGEN_REGION": "us-east-1"}, "leases", "fence-restore", "--yes", "--lease-store", store); code != 2 {
		t.Fatalf("fence-restore with IDGEN_REGION only: %d\n%s", code, out)
	}
	if code, out := run(t, "leases", "fence-restore", "--region", "us-east-1", "--lease-store", store); code != 2 || !strings.Contains(out, "pass --yes") ||
		!strings.Contains(out, "fence 2 of the 3 lease rows of table idgen-leases-v2 in us-east-1") || !strings.Contains(out, "3 (gen-a/pid-1/1)") {
		t.Fatalf("fence-restore without --yes: %d\n%s", code, out)
	}
	code, out := run(t, "leases", "fence-restore", "--region", "us-east-1", "--lease-store", store, "--yes")
	// The two rows, and a row for each of the 509 numbers without one (512 in v2, one quarantined).
	if code != 0 || !strings.Contains(out, "fenced 511 lease rows") {
		t.Fatalf("fence-restore: %d\n%s", code, out)
	}

	m := jsonOf(t, mustRun(t, "leases", "list", "--lease-store", store, "--output", "json"))
	states := map[float64]any{}
	for _, l := range m["leases"].([]any) {
		l := l.(map[string]any)
		states[l["machine"].(float64)] = l["state"]
	}
	if states[3] != "fenced" || states[4] != "fenced" || states[5] != "quarantined" || states[100] != "fenced" || len(states) != 512 {
		t.Fatalf("leases list after the fence: %v", states)
	}
	if out := mustRun(t, "leases", "get", "3", "--lease-store", store); !strings.Contains(out, "3        fenced  gen-a/pid-1/1  2") {
		t.Fatalf("leases get of a fenced row:\n%s", out)
	}
	// A fenced row is nobody's live lease: a quarantine of it does not say so.
	if _, out := run(t, "leases", "quarantine", "3", "--lease-store", store); strings.Contains(out, "live generator") || !strings.Contains(out, "(table idgen-leases-v2), fenced now:") {
		t.Fatalf("quarantine of a fenced row:\n%s", out)
	}

	// A fence whose expiry has passed, and a claim after it: expired, then held again.
	store2, st2 := sqliteStore(t)
	claim(t, st2, 9, "gen-c/pid-3/3", now.Add(-10*time.Minute), now.Add(-9*time.Minute))
	if _, _, err := lease.FenceRestore(ctx, st2, now.Add(-5*time.Minute), 16); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, "leases", "get", "9", "--lease-store", store2); !strings.Contains(out, "9        expired") {
		t.Fatalf("a fence in the past:\n%s", out)
	}
	claim(t, st2, 9, "gen-d/pid-4/4", now, now.Add(time.Minute))
	if out := mustRun(t, "leases", "get", "9", "--lease-store", store2); !strings.Contains(out, "9        held   gen-d/pid-4/4  3") {
		t.Fatalf("a claim after the fence:\n%s", out)
	}
}

// TestRetireRefusesAPeer: a region that is another active region's peer is not retired; the
// retire asks, or needs --yes.
func TestRetireRefusesAPeer(t *testing.T) {
	reg := startRegistry(t)
	mustRun(t, "regions", "add", "eu-central-1", "--peer", "eu-west-1", "--registry", reg)
	if code, out := run(t, "regions", "retire", "eu-west-1", "--registry", reg, "--yes"); code != 1 || !strings.Contains(out, "peer of active region eu-central-1") {
		t.Fatalf("retire of a peer: %d\n%s", code, out)
	}
	if code, out := run(t, "regions", "retire", "us-east-1", "--registry", reg, "--yes"); code != 1 || !strings.Contains(out, "peer of active region us-west-2, eu-west-1") {
		t.Fatalf("retire of us-east-1: %d\n%s", code, out)
	}
	if code, out := run(t, "regions", "retire", "eu-central-1", "--registry", reg); code != 2 || !strings.Contains(out, "pass --yes") || !strings.Contains(out, "retire region eu-central-1 (number 5, peer eu-west-1") {
		t.Fatalf("retire without --yes: %d\n%s", code, out)
	}
	if code, stdout, stderr := runTerminal(t, "N\n", "regions", "retire", "eu-central-1", "--registry", reg); code != 1 {
		t.Fatalf("retire answered N: %d\n%s%s", code, stdout, stderr)
	}
	if out := mustRun(t, "regions", "get", "eu-central-1", "--registry", reg); !strings.Contains(out, "active") {
		t.Fatalf("a refused retire retired:\n%s", out)
	}
	if code, stdout, stderr := runTerminal(t, "y\n", "regions", "retire", "eu-central-1", "--registry", reg); code != 0 || !strings.Contains(stdout, "retired") {
		t.Fatalf("retire confirmed: %d\n%s%s", code, stdout, stderr)
	}
	// Its peer is no longer any active region's: it may go now.
	if code, out := run(t, "regions", "retire", "eu-west-1", "--registry", reg, "--yes"); code != 0 {
		t.Fatalf("retire once no region has it as peer: %d\n%s", code, out)
	}
}

// TestEnvironment: every flag falls back to IDGEN_<FLAG>; a bad value there is an error naming
// the variable; a flag on the command line wins.
func TestEnvironment(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{"IDGEN_OUTPUT": "xml"}, []string{"decode", "1"}, "$IDGEN_OUTPUT=\"xml\" is not a valid --output: want text or json"},
		{map[string]string{"IDGEN_SCHEDULE": "v3"}, []string{"decode", "1"}, "IDGEN_SCHEDULE"},
		{map[string]string{"IDGEN_TABLE": "v9"}, []string{"leases", "list"}, "IDGEN_TABLE"},
		{map[string]string{"IDGEN_RUN_IDS": "many"}, []string{"dupcheck", "-"}, "IDGEN_RUN_IDS"},
		{map[string]string{"IDGEN_LEASE": "5 minutes"}, []string{"leases", "init"}, "IDGEN_LEASE"},
	} {
		if code, out := runEnv(t, tt.env, tt.args...); code != 2 || !strings.Contains(out, tt.want) {
			t.Errorf("%v %v: exit %d, want 2 saying %q\n%s", tt.env, tt.args, code, tt.want, out)
		}
	}
	env := map[string]string{"IDGEN_OUTPUT": "json", "IDGEN_REGISTRY": "http://127.0.0.1:1"}
	if code, out := runEnv(t, env, "decode", "683244571854022659"); code != 0 || !strings.HasPrefix(out, "{") {
		t.Fatalf("IDGEN_OUTPUT=json: %d\n%s", code, out)
	}
	if code, out := runEnv(t, env, "decode", "683244571854022659", "--output", "text"); code != 0 || !strings.HasPrefix(out, "id ") {
		t.Fatalf("--output text over IDGEN_OUTPUT=json: %d\n%s", code, out)
	}
	if code, out := run(t, "decode", "1", "--output", "xml"); code != 2 || !strings.Contains(out, "want text or json") {
		t.Fatalf("--output xml: %d\n%s", code, out)
	}
}

// TestUsage: help, completion, group commands, negative numbers, and what to pass when no lease
// store is found.
func TestUsage(t *testing.T) {
	if code, out := run(t, "decode", "-1"); code != 1 || !strings.Contains(out, `"-1" is negative`) {
		t.Fatalf("decode -1: %d\n%s", code, out)
	}
	if code, out := run(t, "explain", "-42", "--schedule", "v1-v2"); code != 1 || !strings.Contains(out, "negative") {
		t.Fatalf("explain -42: %d\n%s", code, out)
	}
	if code, out := run(t, "leases", "get", "-1"); code != 2 || !strings.Contains(out, "-1 is negative") {
		t.Fatalf("leases get -1: %d\n%s", code, out)
	}
	for _, group := range []struct{ name, sub string }{{"layouts", "show"}, {"leases", "fence-restore"}, {"regions", "retire"}, {"infra", "check-plan"}, {"callers", "check"}} {
		if code, out := run(t, group.name); code != 0 || !strings.Contains(out, "Available Commands:") || !strings.Contains(out, group.sub) {
			t.Errorf("idgenctl %s: %d\n%s", group.name, code, out)
		}
	}
	if code, out := run(t, "regions", "frobnicate"); code != 2 || !strings.Contains(out, `unknown command "frobnicate"`) {
		t.Fatalf("regions frobnicate: %d\n%s", code, out)
	}
	for _, args := range [][]string{{"decode", "--help"}, {"leases", "quarantine", "--help"}, {"help", "leases", "fence-restore"}, {"infra", "apply", "-h"}} {
		if code, out := run(t, args...); code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("idgenctl %v: %d\n%s", args, code, out)
		}
	}
	if _, out := run(t, "leases", "quarantine", "--help"); !strings.Contains(out, "--yes") {
		t.Errorf("quarantine --help lacks --yes:\n%s", out)
	}
	for shell, want := range map[string]string{"bash": "bash completion", "zsh": "#compdef idgenctl", "fish": "complete -c idgenctl"} {
		if code, out := run(t, "completion", shell); code != 0 || !strings.Contains(out, want) {
			t.Errorf("completion %s: %d\n%.300s", shell, code, out)
		}
	}
	if code, out := run(t, "decode", "1", "--peer", "x"); code != 2 || !strings.Contains(out, "not a flag of idgenctl decode") {
		t.Fatalf("a flag of another command: %d\n%s", code, out)
	}
	if code, out := run(t, "--yes", "decode", "1"); code != 2 || !strings.Contains(out, "unknown flag: --yes (not a flag of idgenctl decode)") {
		t.Fatalf("a flag of another command before the words: %d\n%s", code, out)
	}
	if code, out := run(t, "--output", "json", "-y", "decode", "683244571854022659", "--registry", "http://127.0.0.1:1"); code != 2 || !strings.Contains(out, "unknown shorthand flag: 'y' in -y (not a flag of idgenctl decode)") {
		t.Fatalf("a shorthand of another command before the words: %d\n%s", code, out)
	}
	if code, out := run(t, "--output", "json", "decode", "683244571854022659", "--registry", "http://127.0.0.1:1"); code != 0 || !strings.HasPrefix(out, "{") {
		t.Fatalf("a common flag and its value before the words: %d\n%s", code, out)
	}

	out := mustRun(t, "layouts", "show", "--schedule", "v1-v2")
	for _, want := range []string{"schedule v1-v2", "v1      2026-01-01T00:00:00Z  timestamp(41) machine(10) sequence(12)", "v2      2028-01-01T00:00:00Z  timestamp(41) region(3) machine(9) sequence(10)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("layouts show --schedule v1-v2 lacks %q:\n%s", want, out)
		}
	}

	// No lease store: say what to pass. The default is the local stack's file in the working
	// directory, which this package's folder does not have.
	if _, err := os.Stat(".idgen"); err == nil {
		t.Skip("a .idgen folder is here")
	}
	if code, out := run(t, "leases", "list"); code != 2 || !strings.Contains(out, "no lease store for region us-east-1") || !strings.Contains(out, "--lease-store sqlite:PATH or dynamodb:ENDPOINT_URL") {
		t.Fatalf("leases list without a store: %d\n%s", code, out)
	}
	if code, out := run(t, "leases", "list", "--region", "mars-1"); code != 2 || !strings.Contains(out, `region "mars-1" is none of the built-in regions`) {
		t.Fatalf("leases list of an unknown region: %d\n%s", code, out)
	}
	if code, out := run(t, "leases", "list", "--region", "eu-west-1", "--lease-store", "us-east-1=sqlite:/x.db"); code != 2 || !strings.Contains(out, "no single store for region eu-west-1 (it has us-east-1)") {
		t.Fatalf("leases list of a region the stores lack: %d\n%s", code, out)
	}
}

// TestTerminal: on a real terminal (script(1) gives idgenctl one), a change asks and reads the
// answer from it.
func TestTerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) not installed")
	}
	store, st := sqliteStore(t)
	now := time.Now()
	claim(t, st, 3, "gen-a/pid-1/1", now, now.Add(time.Minute))
	for _, tt := range []struct {
		answer string
		want   string
		state  string
	}{
		{"n\n", "not confirmed", "gen-a/pid-1/1"},
		{"y\n", "quarantined  QUARANTINED", lease.QuarantineHolder},
	} {
		cmd := exec.Command(scriptBin, "-qec", bins["idgenctl"]+" leases quarantine 3 --lease-store "+store, "/dev/null")
		cmd.Stdin = strings.NewReader(tt.answer)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), "Proceed? [y/N]") || !strings.Contains(string(out), tt.want) {
			t.Fatalf("answered %q on a terminal:\n%s", tt.answer, out)
		}
		if r, _ := st.Get(context.Background(), 3); r.Holder != tt.state {
			t.Fatalf("answered %q: holder %s", tt.answer, r.Holder)
		}
	}
}

// TestHistoryErrorReported: a quarantine or lift whose history event cannot be written still
// changes the row, prints it, and fails saying the history lacks it.
func TestHistoryErrorReported(t *testing.T) {
	store, st := sqliteStore(t)
	now := time.Now()
	claim(t, st, 3, "gen-a/pid-1/1", now, now.Add(time.Minute))
	db, err := sql.Open("sqlite", strings.TrimPrefix(store, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER refuse BEFORE INSERT ON "` + lease.TableHistory + `" BEGIN SELECT RAISE(ABORT, 'history refused'); END`); err != nil {
		t.Fatal(err)
	}
	code, out := run(t, "leases", "quarantine", "3", "--lease-store", store, "--yes")
	if code != 1 || !strings.Contains(out, "3        quarantined") || !strings.Contains(out, "lease-history event was not written") || !strings.Contains(out, "history refused") {
		t.Fatalf("quarantine with a failing history: %d\n%s", code, out)
	}
	code, out = run(t, "leases", "lift", "3", "--lease-store", store, "--yes")
	if code != 1 || !strings.Contains(out, "3        lifted") || !strings.Contains(out, "lease-history event was not written") {
		t.Fatalf("lift with a failing history: %d\n%s", code, out)
	}
}
