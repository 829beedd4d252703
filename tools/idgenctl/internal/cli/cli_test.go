package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/localstack/cmdline"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/tools/idgenctl/internal/cli"
)

// bins holds the binaries the tests run, by name, built once for every test binary of the run
// (proc's cache).
var bins = map[string]string{}

func TestMain(m *testing.M) {
	names := []string{"registry", "generator", "idgenctl"}
	built, err := proc.Build(context.Background(), "../../../../services/registry/cmd/registry", "../../../../services/generator/cmd/generator", "../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for i, name := range names {
		bins[name] = built[i]
	}
	os.Exit(m.Run())
}

// run runs idgenctl and returns its exit code and output.
func run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), args, &out, &errb, func(string) string { return "" })
	return code, out.String() + errb.String()
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out := run(t, args...)
	if code != 0 {
		t.Fatalf("idgenctl %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

func jsonOf(t *testing.T, s string) map[string]any {
	t.Helper()
	// The first JSON value: what a change prints on stderr follows it.
	var m map[string]any
	if err := json.NewDecoder(strings.NewReader(s)).Decode(&m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return m
}

// startProc starts bin for the test and waits until healthURL answers 200.
func startProc(t *testing.T, bin string, healthURL string, args ...string) *proc.Proc {
	t.Helper()
	return proc.StartT(t, proc.Spec{Bin: bin, Args: args, HealthURL: healthURL})
}

func TestExplainAndDecode(t *testing.T) {
	out := mustRun(t, "explain", "97301141913751557", "--schedule", "v1-v2")
	for _, want := range []string{"layout v1", "machine    21-12   37", "2026-09-26T12:00:00.000Z"} {
		if !strings.Contains(out, want) {
			t.Fatalf("explain lacks %q:\n%s", want, out)
		}
	}
	m := jsonOf(t, mustRun(t, "decode", "683244571854022659", "--schedule", "v1-v2", "--output", "json"))
	if m["layout"] != "v2" || m["region_number"] != float64(2) || m["machine"] != float64(170) || m["created_at"] != "2031-03-01T09:30:00.000Z" {
		t.Fatalf("decode json %v", m)
	}
	if code, out := run(t, "decode", "--", "-7"); code != 1 || !strings.Contains(out, "negative") {
		t.Fatalf("decode -7: %d %s", code, out)
	}
	if code, _ := run(t, "frobnicate"); code != 2 {
		t.Fatalf("unknown command exit %d", code)
	}
}

// The local stack: a registry and a generator with SQLite files, as make run starts them.
func TestLocalStack(t *testing.T) {
	dir := t.TempDir()
	regPort, genPort := testenv.FreePort(t), testenv.FreePort(t)
	reg := fmt.Sprintf("http://127.0.0.1:%d", regPort)
	gen := fmt.Sprintf("http://127.0.0.1:%d", genPort)
	leases := filepath.Join(dir, "leases-us-east-1.db")
	startProc(t, bins["registry"], reg+"/healthz", cmdline.Registry{Listen: fmt.Sprintf("127.0.0.1:%d", regPort), Store: "sqlite:" + filepath.Join(dir, "registry.db")}.Args()...)
	startProc(t, bins["generator"], gen+"/healthz", cmdline.Generator{Registry: reg, Listen: fmt.Sprintf("127.0.0.1:%d", genPort),
		LeaseStore: "sqlite:" + leases, Range: "3-3", Lease: "3s", Renew: "500ms", FenceMargin: "500ms"}.Args()...)

	out := mustRun(t, "regions", "list", "--registry", reg)
	if !strings.Contains(out, "NUMBER  NAME            PEER            STATUS") || !strings.Contains(out, "2       eu-west-1       us-east-1       active") {
		t.Fatalf("regions list:\n%s", out)
	}
	m := jsonOf(t, mustRun(t, "regions", "add", "eu-central-1", "--peer", "eu-west-1", "--registry", reg, "--output", "json"))
	if m["number"] != float64(5) || m["status"] != "active" {
		t.Fatalf("regions add: %v", m)
	}
	m = jsonOf(t, mustRun(t, "regions", "retire", "eu-central-1", "--registry", reg, "--output", "json", "--yes"))
	if m["status"] != "retired" || m["retired_at"] == nil {
		t.Fatalf("regions retire: %v", m)
	}
	if code, out := run(t, "regions", "retire", "eu-central-1", "--registry", reg, "--yes"); code != 1 || !strings.Contains(out, "already retired") {
		t.Fatalf("second retire: %d %s", code, out)
	}
	m = jsonOf(t, mustRun(t, "regions", "add", "eu-north-1", "--peer", "eu-west-1", "--registry", reg, "--output", "json"))
	if m["number"] != float64(6) {
		t.Fatalf("add after a retire took number %v, want 6 (5 is never reused)", m["number"])
	}
	mustRun(t, "regions", "add", "eu-south-1", "--peer", "eu-west-1", "--registry", reg)
	code, out := run(t, "regions", "add", "me-south-1", "--peer", "eu-west-1", "--registry", reg)
	if code != 1 || !strings.Contains(out, "UUIDv7") || !strings.Contains(out, "0 left") {
		t.Fatalf("ninth region: %d %s", code, out)
	}
	out = mustRun(t, "layouts", "show", "--registry", reg)
	if !strings.Contains(out, "schedule v2") || !strings.Contains(out, "timestamp(41) region(3) machine(9) sequence(10)") {
		t.Fatalf("layouts show:\n%s", out)
	}

	out = mustRun(t, "health", "--region", "us-east-1", "--generators", gen)
	if !strings.Contains(out, gen+"  ok") || !strings.Contains(out, "v2:3") || !strings.Contains(out, "check=warn") {
		t.Fatalf("health:\n%s", out)
	}
	out = mustRun(t, "leases", "list", "--region", "us-east-1", "--lease-store", "sqlite:"+leases)
	if !strings.Contains(out, "MACHINE  STATE  HOLDER") || !strings.Contains(out, "3        held") {
		t.Fatalf("leases list:\n%s", out)
	}
	m = jsonOf(t, mustRun(t, "leases", "get", "3", "--lease-store", "sqlite:"+leases, "--output", "json"))
	holder, _ := m["holder"].(string)
	if m["state"] != "held" || !strings.Contains(holder, "/pid-") {
		t.Fatalf("leases get: %v", m)
	}
	out = mustRun(t, "leases", "who-held", "3", "--at", time.Now().Add(time.Second).UTC().Format(time.RFC3339), "--lease-store", "sqlite:"+leases)
	if !strings.Contains(out, "held by "+holder) {
		t.Fatalf("who-held:\n%s", out)
	}
	// Quarantine the generator's number: it drops it at its next renewal and reports no_lease.
	out = mustRun(t, "leases", "quarantine", "3", "--lease-store", "sqlite:"+leases, "--yes")
	if !strings.Contains(out, "quarantined  QUARANTINED") {
		t.Fatalf("quarantine:\n%s", out)
	}
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		code, out := run(t, "health", "--generators", gen)
		return code == 1 && strings.Contains(out, "no_lease"), "the generator still serves a quarantined number:\n" + out
	})
	// A lift leaves the number unclaimable for one lease and the margin: a holder paused through
	// the quarantine may still issue up to its own fence until then (model rule lift_waits).
	lifted := time.Now()
	// The lease and margin are the table's rules, which the generator, its first holder, wrote.
	m = jsonOf(t, mustRun(t, "leases", "lift", "3", "--lease-store", "sqlite:"+leases, "--output", "json", "--yes"))
	if exp, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(m["lease_expiry"])); exp.Before(lifted.Add(3500 * time.Millisecond)) {
		t.Fatalf("lift set the expiry to %v, want at least one lease and the margin from now: %v", m["lease_expiry"], m)
	}
	if m["state"] != "lifted" || m["holder"] != "LIFTED" {
		t.Fatalf("a lifted number, before its expiry: %v, want state lifted", m)
	}
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		code, out := run(t, "health", "--generators", gen)
		return code == 0, "the generator did not claim the lifted number:\n" + out
	})
	if code, out := run(t, "leases", "lift", "3", "--lease-store", "sqlite:"+leases, "--yes"); code != 1 || !strings.Contains(out, "not quarantined") {
		t.Fatalf("lift of a held number: %d %s", code, out)
	}
}

func TestLeasesAgainstDynamoDB(t *testing.T) {
	srv := testenv.StartDynaliteWithTables(t, "", dynamolease.Tables(lease.TableV2, lease.TableHistory))
	ctx := context.Background()
	db, err := dynamolease.NewClient(ctx, srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	st := dynamolease.New(db, lease.TableV2, lease.TableHistory)
	// The table's first holder: a one-minute lease, so that the 512 fenced rows are still fenced
	// when one is read back on a busy machine.
	if _, err := lease.CheckTable(ctx, st, lease.Settings{Lease: time.Minute, Renew: 10 * time.Second, Margin: time.Second}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r, _ := st.Claim(ctx, 12, "host-a/pid-1/1", now.UnixMilli(), now.Add(time.Minute).UnixMilli())
	_ = st.AppendHistory(ctx, lease.Event{Machine: 12, AtUnixMs: now.UnixMilli(), Kind: lease.KindClaim, Holder: r.Holder, Epoch: r.Epoch, ExpiryUnixMs: r.ExpiryUnixMs})
	store := "dynamodb:" + srv.Endpoint

	m := jsonOf(t, mustRun(t, "leases", "list", "--lease-store", store, "--output", "json"))
	ls, _ := m["leases"].([]any)
	if len(ls) != 1 || m["table_id"] == "" || m["table_id"] != m["metadata_table_id"] {
		t.Fatalf("leases list: %v", m)
	}
	out := mustRun(t, "leases", "who-held", "12", "--at", now.Add(time.Second).UTC().Format(time.RFC3339Nano), "--lease-store", store)
	if !strings.Contains(out, "held by host-a/pid-1/1") {
		t.Fatalf("who-held:\n%s", out)
	}
	m = jsonOf(t, mustRun(t, "leases", "quarantine", "12", "--lease-store", store, "--output", "json", "--yes"))
	if m["state"] != "quarantined" {
		t.Fatalf("quarantine: %v", m)
	}
	m = jsonOf(t, mustRun(t, "leases", "lift", "12", "--lease-store", store, "--output", "json", "-y"))
	if m["holder"] != lease.LiftedHolder {
		t.Fatalf("lift: %v", m)
	}
	if code, out := run(t, "leases", "get", "99", "--lease-store", store); code != 1 || !strings.Contains(out, "never claimed") {
		t.Fatalf("get of an unknown number: %d %s", code, out)
	}
	out = mustRun(t, "--yes", "leases", "fence-restore", "--region", "us-east-1", "--lease-store", store)
	if !strings.Contains(out, "fenced 512 lease rows") { // number 12, and the 511 numbers without a row
		t.Fatalf("fence-restore:\n%s", out)
	}
	if m := jsonOf(t, mustRun(t, "leases", "get", "99", "--lease-store", store, "--output", "json")); m["state"] != "fenced" || m["holder"] != lease.FencedHolder {
		t.Fatalf("a number without a row, after the fence: %v", m)
	}
	m = jsonOf(t, mustRun(t, "leases", "who-held", "12", "--lease-store", store, "--output", "json"))
	if h, _ := m["holder"].(map[string]any); h["event"] != "fence" {
		t.Fatalf("who-held after the fence: %v", m)
	}
}

func TestInfraCheckPlan(t *testing.T) {
	for _, tt := range []struct {
		file string
		code int
		want string
	}{
		{"safe.json", 0, "nothing refused"},
		{"delete-lease-table.json", 1, "refused: module.region_eu_west_1.aws_dynamodb_table.leases: deletes the lease table idgen-leases-v2"},
		{"missing.json", 1, "no such file"},
	} {
		var stdout, stderr strings.Builder
		code := cli.Run(context.Background(), []string{"infra", "check-plan", filepath.Join("..", "infra", "testdata", tt.file)}, &stdout, &stderr, func(string) string { return "" })
		if code != tt.code || !strings.Contains(stdout.String()+stderr.String(), tt.want) {
			t.Errorf("check-plan %s: exit %d\n%s%s\nwant exit %d saying %q", tt.file, code, stdout.String(), stderr.String(), tt.code, tt.want)
		}
	}
	var stdout, stderr strings.Builder
	if code := cli.Run(context.Background(), []string{"infra", "apply"}, &stdout, &stderr, func(string) string { return "" }); code != 2 || !strings.Contains(stderr.String(), "--plan FILE") {
		t.Errorf("infra apply without a plan: exit %d %s", code, stderr.String())
	}
}

func TestHelpFlag(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		var stdout, stderr strings.Builder
		if code := cli.Run(context.Background(), args, &stdout, &stderr, func(string) string { return "" }); code != 0 || !strings.Contains(stdout.String(), "idgenctl decode ID") {
			t.Errorf("idgenctl %v: exit %d\n%s%s", args, code, stdout.String(), stderr.String())
		}
	}
}
