package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/conn/dynamo"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping/backfill"
	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/idgen/idgen/tools/idgenctl/internal/cli"
)

// TestPublicIDsBackfillUsage: bad flags are exit 2, before any store is reached.
func TestPublicIDsBackfillUsage(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	if err := backfill.SaveFile(state, backfill.FileState{From: "redis:10.0.0.1:6379", To: "dynamodb:http://127.0.0.1:1 table idgen-public-ids"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no --from", []string{"--to", "dynamodb:http://127.0.0.1:1"}, "--from REDIS_STORE"},
		{"no --to", []string{"--from", "redis:127.0.0.1:1"}, "--to dynamodb:ENDPOINT_URL"},
		{"a SQLite source", []string{"--from", "sqlite:x.db", "--to", "dynamodb:http://127.0.0.1:1"}, "--from"},
		{"a Redis target", []string{"--from", "redis:127.0.0.1:1", "--to", "redis:127.0.0.1:2"}, "--to"},
		{"no table", []string{"--from", "redis:127.0.0.1:1", "--to", "dynamodb:http://127.0.0.1:1", "--dynamodb-table", ""}, "--dynamodb-table"},
		{"page size 0", []string{"--from", "redis:127.0.0.1:1", "--to", "dynamodb:http://127.0.0.1:1", "--page-size", "0"}, "--page-size"},
		{"workers not a number", []string{"--from", "redis:127.0.0.1:1", "--to", "dynamodb:http://127.0.0.1:1", "--workers", "many"}, "--workers"},
		{"an argument", []string{"--from", "redis:127.0.0.1:1", "--to", "dynamodb:http://127.0.0.1:1", "extra"}, "want 0 argument"},
		{"a state file in no directory", []string{"--from", "redis:127.0.0.1:1", "--to", "dynamodb:http://127.0.0.1:1", "--state", "/nonexistent/dir/state.json"}, "its directory does not exist"},
		{"another backfill's state", []string{"--from", "redis:127.0.0.1:1", "--to", "dynamodb:http://127.0.0.1:1", "--state", state}, "is of a backfill from redis:10.0.0.1:6379"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out := run(t, append([]string{"publicids", "backfill"}, c.args...)...)
			if code != 2 || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, want 2 and %q:\n%s", code, c.want, out)
			}
		})
	}
}

// TestPublicIDsBackfill: idgenctl publicids backfill copies a real Redis store's mappings into
// dynalite; a run stopped after some pages (its context cancelled, as SIGINT does) exits 1 and
// says how to go on, a run with the same --state finishes and exits 0, every mapping then
// resolves in DynamoDB to its internal ID, the counts add up, and a run after the end copies
// nothing.
func TestPublicIDsBackfill(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, t.TempDir())
	src, err := redismap.Open(ctx, redismap.Target{Addr: r.Addr}, redismap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	maker, _ := publicid.NewMaker("ord")
	want := map[string]int64{}
	for in := int64(1); in <= 2000; in++ {
		pub, err := src.Publish(ctx, in, func() (string, error) { return maker.New("ord") })
		if err != nil {
			t.Fatal(err)
		}
		want[pub] = in
	}
	dl := testenv.StartDynaliteWithTables(t, "", dynamomap.Tables("mappings"))
	db, err := dynamo.NewClient(ctx, dl.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state.json")
	args := []string{"publicids", "backfill", "--from", "redis://" + r.Addr, "--to", "dynamodb:" + dl.Endpoint,
		"--dynamodb-table", "mappings", "--state", state, "--page-size", "50", "--output", "json"}

	// Stopped once the state file says three pages are done.
	rctx, cancel := context.WithCancel(ctx)
	go func() {
		for rctx.Err() == nil {
			if fst, ok, _ := backfill.LoadFile(state); ok && fst.State.Counts.Pages >= 3 {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var out, errb bytes.Buffer
	code := cli.Run(rctx, args, &out, &errb, func(string) string { return "" })
	cancel()
	if code != 1 || !strings.Contains(errb.String(), "stopped; run again with --state "+state) {
		t.Fatalf("a stopped run: exit %d\n%s%s", code, out.String(), errb.String())
	}
	var first map[string]any
	if err := json.Unmarshal(out.Bytes(), &first); err != nil || first["done"] != false {
		t.Fatalf("a stopped run's report: %v\n%s", err, out.String())
	}

	// Resumed to the end.
	res := mustRun(t, args...)
	var rep struct {
		Done     bool
		Counts   backfill.Counts
		From     string
		Failures []backfill.Failure
	}
	// The first JSON value: progress lines on stderr may follow it.
	if err := json.NewDecoder(strings.NewReader(res)).Decode(&rep); err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	if rep.From != "redis://"+r.Addr || rep.Failures == nil {
		t.Errorf("the report names the source %q, failures %v", rep.From, rep.Failures)
	}
	c := rep.Counts
	if !rep.Done || c.Scanned != c.Verified+c.Failed || c.Failed != 0 || c.Differing != 0 || c.Scanned < 2000 ||
		c.Copied+c.AlreadyPresent != c.Scanned || c.Copied > 2000 || c.Pages < 4 {
		t.Fatalf("the resumed run's report: %+v", rep)
	}
	dst, err := dynamomap.Open(ctx, dynamomap.Target{Endpoint: dl.Endpoint, Table: "mappings"}, dynamomap.Options{Client: db})
	if err != nil {
		t.Fatal(err)
	}
	for pub, in := range want {
		if got, err := dst.Resolve(ctx, pub); err != nil || got != in {
			t.Fatalf("DynamoDB resolves %s to %d, %v; want %d", pub, got, err, in)
		}
	}

	// After the end: the counts again, nothing copied; text output.
	text := mustRun(t, args[:len(args)-2]...)
	for _, w := range []string{"backfill from redis://" + r.Addr, ": done\n", "failed           0\n"} {
		if !strings.Contains(text, w) {
			t.Errorf("the text report lacks %q:\n%s", w, text)
		}
	}
	fst, _, _ := backfill.LoadFile(state)
	if fst.State.Counts != c {
		t.Fatalf("a run after the end changed the counts: %+v, then %+v", c, fst.State.Counts)
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatal(err)
	}
}

// TestPublicIDsBackfillFailures: a mapping DynamoDB holds for another internal ID is a failure,
// listed, and the run exits 1 after copying the rest.
func TestPublicIDsBackfillFailures(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, t.TempDir())
	src, err := redismap.Open(ctx, redismap.Target{Addr: r.Addr}, redismap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dl := testenv.StartDynaliteWithTables(t, "", dynamomap.Tables(dynamomap.DefaultTable))
	db, err := dynamo.NewClient(ctx, dl.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := dynamomap.Open(ctx, dynamomap.Target{Endpoint: dl.Endpoint}, dynamomap.Options{Client: db})
	if err != nil {
		t.Fatal(err)
	}
	for in := int64(1); in <= 10; in++ {
		if _, err := src.Publish(ctx, in, func() (string, error) { return "ord_failure" + string(rune('a'+in)), nil }); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dst.Copy(ctx, 77, "ord_failureb"); err != nil {
		t.Fatal(err)
	}
	code, out := run(t, "publicids", "backfill", "--from", "redis:"+r.Addr, "--to", "dynamodb:"+dl.Endpoint)
	if code != 1 || !strings.Contains(out, "failed: ord_failureb → 1: mapping: public id maps to another internal id") ||
		!strings.Contains(out, "1 mappings failed") || !strings.Contains(out, "verified         9\n") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}
