package cli_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
	"github.com/idgen/idgen/libs/testenv"
)

// startRegistry starts a registry on SQLite and returns its URL.
func startRegistry(t *testing.T) string {
	t.Helper()
	port := testenv.FreePort(t)
	reg := fmt.Sprintf("http://127.0.0.1:%d", port)
	startProc(t, bins["registry"], reg+"/healthz", "--insecure-dev", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--store", "sqlite:"+filepath.Join(t.TempDir(), "registry.db"))
	return reg
}

func TestDecodeNamesTheRegion(t *testing.T) {
	reg := startRegistry(t)
	mustRun(t, "regions", "add", "eu-central-1", "--peer", "eu-west-1", "--registry", reg)
	id5, _ := idcore.ScheduleV2().Compose(idcore.Parts{Timestamp: 1000, Region: 5, Machine: 3, Sequence: 1})
	id7, _ := idcore.ScheduleV2().Compose(idcore.Parts{Timestamp: 1000, Region: 7, Machine: 3, Sequence: 1})
	for _, tt := range []struct {
		name, registry, id, want string
	}{
		{"registry", reg, "683244571854022659", "region         eu-west-1 (2, from the registry at " + reg + ")"},
		{"region added at the registry", reg, id5.String(), "region         eu-central-1 (5, from the registry at " + reg + ")"},
		{"built-in list", "http://127.0.0.1:1", "683244571854022659", "region         eu-west-1 (2, built-in list: the registry did not answer)"},
		{"built-in list lacks 5", "http://127.0.0.1:1", id5.String(), "region         unassigned (5, built-in list: the registry did not answer)"},
		{"no region has 7", reg, id7.String(), "region         unassigned (7, from the registry at " + reg + ")"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := mustRun(t, "decode", tt.id, "--registry", tt.registry)
			if !strings.Contains(out, tt.want+"\n") {
				t.Fatalf("decode lacks %q:\n%s", tt.want, out)
			}
		})
	}
	out := mustRun(t, "explain", "683244571854022659", "--registry", reg)
	if !strings.Contains(out, "region: eu-west-1 (2, from the registry at "+reg+")") {
		t.Fatalf("explain:\n%s", out)
	}
	m := jsonOf(t, mustRun(t, "decode", "683244571854022659", "--registry", "http://127.0.0.1:1", "--output", "json"))
	if m["region"] != "eu-west-1" || m["region_source"] != "built-in" {
		t.Fatalf("decode json: %v", m)
	}
	// A registry that accepts the connection and never answers: the built-in list, within the timeout.
	srv := hangingServer(t)
	start := time.Now()
	out = mustRun(t, "decode", "683244571854022659", "--registry", srv)
	if !strings.Contains(out, "built-in list") || time.Since(start) > 5*time.Second {
		t.Fatalf("decode with a hanging registry took %v:\n%s", time.Since(start), out)
	}
}

// TestDupcheck plants duplicates in plain and CSV files and checks every count, the decoded
// fields, the windows, and the exit codes.
func TestDupcheck(t *testing.T) {
	dir := t.TempDir()
	sc := idcore.ScheduleV2()
	mk := func(ts int64, r, m, seq int) string {
		id, err := sc.Compose(idcore.Parts{Timestamp: ts, Region: r, Machine: m, Sequence: seq})
		if err != nil {
			t.Fatal(err)
		}
		return id.String()
	}
	base := int64(162898200000)        // 2031-03-01T09:30:00Z
	dupA := mk(base, 2, 170, 3)        // 3 times
	dupB := mk(base+60_000, 2, 170, 9) // twice, same machine a minute later
	dupC := mk(base+5, 0, 12, 0)       // twice, us-east-1
	var plain strings.Builder
	for i := range 50_000 {
		plain.WriteString(mk(base+int64(i/40), i%5, i%40, i%1000) + "\n")
		switch i {
		case 10:
			plain.WriteString(dupA + "\n" + dupB + "\n" + dupC + "\n")
		case 30_000:
			plain.WriteString("\n  " + dupA + "\r\n" + dupC + "\n" + dupB + "\n" + dupA + "\n")
		}
	}
	plainFile := filepath.Join(dir, "ids.txt")
	writeFixture(t, plainFile, []byte(plain.String()))
	csvFile := filepath.Join(dir, "orders.csv")
	writeFixture(t, csvFile, []byte("order,id,note\n1,"+dupA+",\"a, quoted\"\n2,\""+dupB+"\",x\n"))

	// Small runs: the merge and the multi-level reduce (more than 64 runs) are both exercised.
	args := []string{"dupcheck", plainFile, "--run-ids", "1024", "--registry", "http://127.0.0.1:1", "--tmp-dir", dir}
	code, out := run(t, args...)
	if code != 1 {
		t.Fatalf("dupcheck exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{
		"ID                   TIMES  CREATED AT                REGION          MACHINE  SEQUENCE",
		dupA + "       3  2031-03-01T09:30:00.000Z  eu-west-1           170         3",
		dupB + "       2  2031-03-01T09:31:00.000Z  eu-west-1           170         9",
		dupC + "       2  2031-03-01T09:30:00.005Z  us-east-1            12         0",
		"50007 IDs read, 3 seen more than once (region names: built-in list: the registry did not answer)",
		"us-east-1            12           1  2031-03-01T09:30:00.005Z  2031-03-01T09:30:00.005Z  idgenctl incident " + dupC,
		"eu-west-1           170           2  2031-03-01T09:30:00.000Z  2031-03-01T09:31:00.000Z  idgenctl incident " + dupA,
		"idgenctl: dupcheck: 3 IDs seen more than once",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dupcheck lacks %q", want)
		}
	}
	if t.Failed() {
		t.Fatalf("output:\n%s", out)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("temporary runs left behind: %v", ents)
	}

	// The CSV and the plain file together, JSON.
	code, out = run(t, "dupcheck", plainFile, csvFile, "--column", "id", "--output", "json", "--registry", "http://127.0.0.1:1")
	if code != 2 || !strings.Contains(out, "ids.txt:1: no column \"id\" in the header") {
		t.Fatalf("--column on a plain file: %d %s", code, out)
	}
	var stdout, stderr strings.Builder
	f, _ := os.Open(csvFile)
	defer f.Close()
	code = runWithStdin(t, f, &stdout, &stderr, "dupcheck", "-", "--column", "id", "--output", "json", "--registry", "http://127.0.0.1:1")
	m := jsonOf(t, stdout.String())
	sum, _ := m["summary"].(map[string]any)
	if code != 0 || sum["ids_read"] != float64(2) || sum["duplicate_ids"] != float64(0) {
		t.Fatalf("csv on stdin: exit %d %v %s", code, m, stderr.String())
	}
	writeFixture(t, filepath.Join(dir, "more.csv"), []byte("id\n"+dupA+"\n"+dupB+"\n"))
	code, out = run(t, "dupcheck", csvFile, filepath.Join(dir, "more.csv"), "--column", "id", "--output", "json", "--registry", "http://127.0.0.1:1")
	if code != 1 {
		t.Fatalf("two CSV files: exit %d\n%s", code, out)
	}
	m = jsonOf(t, strings.SplitN(out, "idgenctl:", 2)[0])
	dups, _ := m["duplicates"].([]any)
	if len(dups) != 2 || dups[0].(map[string]any)["id"] != dupA || dups[0].(map[string]any)["region"] != "eu-west-1" {
		t.Fatalf("json duplicates: %v", m)
	}

	// Unreadable input: exit 2, file and line named.
	bad := filepath.Join(dir, "bad.txt")
	writeFixture(t, bad, []byte(dupA+"\n"+dupB+"\n12x4\n"))
	badCSV := filepath.Join(dir, "bad.csv")
	writeFixture(t, badCSV, []byte("id,n\n"+dupA+",1\n\"unterminated,2\n"))
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{bad}, "bad.txt:3: not an ID: \"12x4\""},
		{[]string{filepath.Join(dir, "missing.txt")}, "missing.txt: no such file or directory"},
		{[]string{csvFile}, "orders.csv:1: not an ID: \"order,id,note\" (CSV needs --column NAME)"},
		{[]string{badCSV, "--column", "id"}, "bad.csv:3"},
		{[]string{csvFile, "--column", "ID"}, "orders.csv:1: no column \"ID\" in the header (columns: order, id, note)"},
		{[]string{plainFile + "-none", "--output", "json"}, "no such file"},
	} {
		code, out := run(t, append(append([]string{"dupcheck"}, tt.args...), "--registry", "http://127.0.0.1:1")...)
		if code != 2 || !strings.Contains(out, tt.want) {
			t.Errorf("dupcheck %v: exit %d, want 2 saying %q\n%s", tt.args, code, tt.want, out)
		}
	}
}

// TestDupcheckMemoryBound runs the binary on four million IDs with runs of 256 Ki IDs (2 MiB):
// its peak resident memory stays far below what holding the IDs would take (32 MiB as a sorted
// array, over 100 MiB as a map).
func TestDupcheckMemoryBound(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ids.txt")
	f, _ := os.Create(file)
	w := bufio.NewWriterSize(f, 1<<20)
	const n = 4_000_000
	base := int64(162898200000)
	for j := int64(0); j < n; j++ {
		i := (j * 999999937) % n // every index once, scattered
		id := (base+i/40)<<22 | (i%5)<<19 | (i%40/5*7)<<10 | (i % 997)
		w.WriteString(strconv.FormatInt(id, 10))
		w.WriteByte('\n')
		if j == n/2 || j == n/3 {
			w.WriteString(strconv.FormatInt(id, 10) + "\n")
		}
	}
	w.Flush()
	f.Close()
	cmd := exec.Command(bins["idgenctl"], "dupcheck", file, "--run-ids", "262144", "--tmp-dir", dir, "--registry", "http://127.0.0.1:1")
	var outb strings.Builder
	cmd.Stdout, cmd.Stderr = &outb, &outb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The peak is the process's VmHWM, read while it runs (rusage's maxrss would count the test
	// binary's memory, which the child shares until it execs).
	var maxRSS int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if st, ok := testenv.ReadProcStatus(cmd.Process.Pid); ok && st.Name == "idgenctl" {
				maxRSS = st.VmHWM
			} else if maxRSS > 0 {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	err := cmd.Wait()
	<-done
	out := outb.String()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("dupcheck: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "4000002 IDs read, 2 seen more than once") {
		t.Fatalf("dupcheck output:\n%s", out)
	}
	if maxRSS == 0 {
		t.Fatal("no VmHWM read from /proc")
	}
	t.Logf("dupcheck of %d IDs: peak RSS %.1f MiB", n, float64(maxRSS)/(1<<20))
	if maxRSS > 40<<20 {
		t.Fatalf("peak RSS %.1f MiB on %d IDs: the memory bound does not hold", float64(maxRSS)/(1<<20), n)
	}
}

func TestIncident(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	// The same history in both stores: host-a held 170 in eu-west-1 until 09:20, host-b from
	// 09:25; the duplicate was made at 09:30.
	at := time.Date(2031, 3, 1, 9, 30, 0, 0, time.UTC)
	history := []lease.Event{
		{Machine: 170, AtUnixMs: at.Add(-40 * time.Minute).UnixMilli(), Kind: lease.KindClaim, Holder: "host-a/pid-7/1", Epoch: 4, ExpiryUnixMs: at.Add(-35 * time.Minute).UnixMilli()},
		{Machine: 170, AtUnixMs: at.Add(-10 * time.Minute).UnixMilli(), Kind: lease.KindRelease, Holder: "host-a/pid-7/1", Epoch: 4, ExpiryUnixMs: at.Add(-10 * time.Minute).UnixMilli()},
		{Machine: 170, AtUnixMs: at.Add(-5 * time.Minute).UnixMilli(), Kind: lease.KindClaim, Holder: "host-b/pid-9/2", Epoch: 5, ExpiryUnixMs: at.UnixMilli()},
	}
	srv := testenv.StartDynaliteWithTables(t, "", dynamolease.Tables(lease.TableV2, lease.TableHistory))
	db, err := dynamolease.NewClient(ctx, srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	sqlitePath := filepath.Join(t.TempDir(), "leases-eu-west-1.db")
	sq, err := sqlitelease.Open(ctx, sqlitePath, lease.TableV2)
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	stores := map[string]lease.Store{
		"dynamodb": dynamolease.New(db, lease.TableV2, lease.TableHistory),
		"sqlite":   sq,
	}
	specs := map[string]string{"dynamodb": "dynamodb:" + srv.Endpoint, "sqlite": "sqlite:" + sqlitePath}
	for name, st := range stores {
		now := time.Now()
		if _, err := st.Claim(ctx, 170, "host-c/pid-1/3", now.UnixMilli(), now.Add(time.Minute).UnixMilli()); err != nil {
			t.Fatal(err)
		}
		for _, e := range history {
			if err := st.AppendHistory(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(name, func(t *testing.T) {
			// The lease store is given per region: the ID names eu-west-1, whatever --region says.
			store := "us-east-1=sqlite:/nonexistent,eu-west-1=" + specs[name]
			out := mustRun(t, "incident", "683244571854022659", "--schedule", "v1-v2", "--registry", reg, "--lease-store", store, "--region", "us-east-1")
			for _, want := range []string{
				"duplicate ID 683244571854022659",
				"created_at  2031-03-01T09:30:00.000Z (layout v2)",
				"region      eu-west-1 (2, from the registry at " + reg + ")",
				"machine     170",
				"sequence    3",
				"number 170 in eu-west-1 at 2031-03-01T09:30:00Z: held by host-b/pid-9/2 (claimed 2031-03-01T09:25:00.000Z, epoch 5",
				"2031-03-01T08:50:00.000Z  claim    host-a/pid-7/1",
				"2031-03-01T09:20:00.000Z  release  host-a/pid-7/1",
				"now: number 170 is held, holder host-c/pid-1/3",
				"  idgenctl leases quarantine 170 --region eu-west-1\n",
				"holders to stop: host-b/pid-9/2, host-a/pid-7/1",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("incident lacks %q", want)
				}
			}
			// The AWS CLI form of the quarantine, for a DynamoDB store only.
			aws := `  aws dynamodb update-item --region eu-west-1 --table-name idgen-leases-v2 --key '{"machine_id": {"N": "170"}}' --update-expression "SET #h = :q, lease_expiry = :far ADD lease_epoch :one" --expression-attribute-names '{"#h": "holder"}' --expression-attribute-values '{":q": {"S": "QUARANTINED"}, ":far": {"N": "4102444800000"}, ":one": {"N": "1"}}'`
			if got := strings.Contains(out, aws); got != (name == "dynamodb") {
				t.Errorf("%s store: the aws command shown: %v", name, got)
			}
			if t.Failed() {
				t.Fatalf("output:\n%s", out)
			}
			// It changed nothing.
			r, err := st.Get(ctx, 170)
			if err != nil || r.Holder != "host-c/pid-1/3" {
				t.Fatalf("incident changed the lease: %+v %v", r, err)
			}
			m := jsonOf(t, mustRun(t, "incident", "683244571854022659", "--schedule", "v1-v2", "--registry", reg, "--lease-store", store, "--output", "json"))
			next, _ := m["next"].(map[string]any)
			if next["idgenctl"] != "idgenctl leases quarantine 170 --region eu-west-1" || m["current_lease"] == nil {
				t.Fatalf("incident json: %v", m)
			}
		})
	}
	// The store does not answer: the decode and the commands still come out, exit 1.
	code, out := run(t, "incident", "683244571854022659", "--schedule", "v1-v2", "--registry", reg, "--lease-store", "sqlite:/nonexistent")
	if code != 1 || !strings.Contains(out, "who held it: unknown") || !strings.Contains(out, "idgenctl leases quarantine 170 --region eu-west-1") {
		t.Fatalf("incident without a store: %d\n%s", code, out)
	}
}

// writeFixture writes a test's input file, failing the test when it cannot.
func writeFixture(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
