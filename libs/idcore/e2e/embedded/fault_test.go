package embedded_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/embedded/nodeout"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	procpkg "github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
)

// The fault tests run idnode (./idnode) as real processes against a real dynalite, with short
// settings: lease 3 s, renew 0.5 s, fence margin 0.5 s, batches of 20 IDs.

type batch struct {
	at  time.Time
	ids []idcore.ID
}

type proc struct {
	t    *testing.T
	name string
	p    *procpkg.Proc
	done chan struct{} // closed once the process has ended and its output is read

	mu       sync.Mutex
	batches  []batch
	holders  []string
	refusals []string // "reason@unixms"
}

// startProc starts idnode with args; its output goes to NAME.log and is read as it comes.
func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	bin := procpkg.BuildT(t, "../../embedded/idnode")[0]
	in, out := io.Pipe()
	p := &proc{t: t, name: name, done: make(chan struct{})}
	started := time.Now()
	go func() {
		defer close(p.done)
		_ = nodeout.Scan(in, started, p.record)
	}()
	p.p = procpkg.StartT(t, procpkg.Spec{Bin: bin, Args: args, Name: name, Output: out,
		Log: filepath.Join(t.TempDir(), name+".log")})
	go func() {
		_ = p.p.Wait()
		out.Close()
	}()
	return p
}

// record keeps one line of the node's output, stamped with the moment it was read.
func (p *proc) record(l *nodeout.Line) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch l.Kind {
	case nodeout.Batch:
		p.batches = append(p.batches, batch{at: l.Received, ids: l.IDs(nil)})
	case nodeout.Holder:
		p.holders = append(p.holders, l.Text)
	case nodeout.Refused:
		p.refusals = append(p.refusals, fmt.Sprintf("%s@%d", l.Text, l.Received.UnixMilli()))
	}
}

func (p *proc) ids() []idcore.ID {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []idcore.ID
	for _, b := range p.batches {
		out = append(out, b.ids...)
	}
	return out
}

func (p *proc) idsSince(t time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, b := range p.batches {
		if !b.at.Before(t) {
			n += len(b.ids)
		}
	}
	return n
}

func (p *proc) refusedSince(t time.Time) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, r := range p.refusals {
		_, at, _ := strings.Cut(r, "@")
		if ms, _ := strconv.ParseInt(at, 10, 64); ms >= t.UnixMilli() {
			out = append(out, r)
		}
	}
	return out
}

func (p *proc) waitIDs(n int, timeout time.Duration) {
	p.t.Helper()
	testenv.Eventually(p.t, timeout, func() (bool, string) {
		got := len(p.ids())
		return got >= n, fmt.Sprintf("%s issued %d ids, want %d", p.name, got, n)
	})
}

// has says whether p printed a refusal for one of reasons since t.
func (p *proc) has(since time.Time, reasons ...string) func() (bool, string) {
	return func() (bool, string) {
		r := p.refusedSince(since)
		return slices.ContainsFunc(r, func(s string) bool {
			reason, _, _ := strings.Cut(s, "@")
			return slices.Contains(reasons, reason)
		}), fmt.Sprintf("%s refused %v since %s, want one of %v", p.name, r, since.Format(time.TimeOnly), reasons)
	}
}

// renewed holds once number m's lease expiry in the store is later than after.
func (d *dyn) renewed(m int, after int64) func() (bool, string) {
	return func() (bool, string) {
		r, err := d.store.Get(context.Background(), m)
		return err == nil && r.ExpiryUnixMs > after, fmt.Sprintf("number %d: %+v, %v; want an expiry after %d", m, r, err, after)
	}
}

// stop ends the process gracefully (SIGTERM: it stops issuing and releases) and waits for it and
// its output; it fails the test when the process does not exit with status 0 within 10 s.
func (p *proc) stop() {
	p.p.Signal(syscall.SIGCONT)
	if err := p.p.Stop(); err != nil {
		p.t.Errorf("%s did not stop gracefully within 10 s of SIGTERM: %v", p.name, err)
	}
	<-p.done
}

// checkUnique fails on one duplicate among all the processes' IDs and says how many it checked.
func checkUnique(t *testing.T, procs ...*proc) {
	t.Helper()
	var all []idcore.ID
	for _, p := range procs {
		ids := p.ids()
		if !slices.IsSorted(ids) {
			t.Errorf("%s: ids not increasing", p.name)
		}
		all = append(all, ids...)
	}
	slices.Sort(all)
	dups := 0
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			dups++
		}
	}
	t.Logf("checked %d ids from %d processes: %d duplicates", len(all), len(procs), dups)
	if dups > 0 {
		t.Fatalf("%d duplicate ids", dups)
	}
}

type dyn struct {
	srv   *testenv.Dynalite
	db    *dynamodb.Client
	table string
	store *dynamolease.Store
}

func startDynamo(t *testing.T, persistent bool) *dyn {
	t.Helper()
	dir := ""
	if persistent {
		dir = t.TempDir()
	}
	srv := testenv.StartDynaliteWithTables(t, dir, dynamolease.Tables(lease.TableV2, lease.TableHistory))
	db, err := dynamolease.NewClient(context.Background(), srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return &dyn{srv: srv, db: db, table: lease.TableV2, store: dynamolease.New(db, lease.TableV2, lease.TableHistory)}
}

func (d *dyn) args(extra ...string) []string {
	return append([]string{"--store", "dynamodb:" + d.srv.Endpoint, "--lease", "3s", "--renew", "500ms", "--margin", "500ms", "--batch", "20"}, extra...)
}

func maxOf(ids []idcore.ID) idcore.ID { return slices.Max(ids) }
func minOf(ids []idcore.ID) idcore.ID { return slices.Min(ids) }

func TestFaultFrozenHolder(t *testing.T) {
	d := startDynamo(t, false)
	a := startProc(t, "A", d.args("--range", "64-64")...)
	a.waitIDs(500, 20*time.Second)
	a.p.Signal(syscall.SIGSTOP)
	frozenAt := time.Now()
	// B claims the number once A's lease has expired: A stays frozen past it.
	b := startProc(t, "B", d.args("--range", "64-64")...)
	b.waitIDs(500, 20*time.Second)
	// Taken before SIGCONT: A may print its refusal, and the reader stamp it, before this
	// goroutine runs again.
	resumed := time.Now()
	a.p.Signal(syscall.SIGCONT)
	// A's keeper wakes too, finds its fence passed and drops the number (no_lease); B holds it,
	// so A cannot claim it again.
	testenv.Eventually(t, 10*time.Second, a.has(resumed, "no_lease"))
	a.stop()
	b.stop()
	afterResume := a.idsSince(resumed.Add(100 * time.Millisecond))
	checkUnique(t, a, b)
	if afterResume != 0 {
		t.Fatalf("A issued %d ids after it woke up past its fence", afterResume)
	}
	if r := a.refusedSince(resumed); len(r) == 0 {
		t.Fatalf("A printed no refusal after it woke up")
	}
	if maxOf(a.ids()) >= minOf(b.ids()) {
		t.Fatalf("A's last id %d is not below B's first %d", maxOf(a.ids()), minOf(b.ids()))
	}
	t.Logf("A frozen %v; A refused after waking: %v", resumed.Sub(frozenAt).Round(time.Millisecond), a.refusedSince(resumed))
}

func TestFaultCrashAndRestart(t *testing.T) {
	d := startDynamo(t, false)
	a := startProc(t, "A", d.args("--range", "64-64")...)
	a.waitIDs(500, 20*time.Second)
	a.p.Kill()
	<-a.done
	a2 := startProc(t, "A-restarted", d.args("--range", "64-64")...)
	a2.waitIDs(500, 20*time.Second)
	a2.stop()
	checkUnique(t, a, a2)
	if a.holders[0] == a2.holders[0] {
		t.Fatalf("the restarted process reused the holder name %s", a.holders[0])
	}
	if maxOf(a.ids()) >= minOf(a2.ids()) {
		t.Fatalf("the restarted process issued %d, not above the crashed one's last %d", minOf(a2.ids()), maxOf(a.ids()))
	}
}

func TestFaultStoreOutage(t *testing.T) {
	d := startDynamo(t, true)
	a := startProc(t, "A", d.args("--range", "64-64")...)
	a.waitIDs(500, 20*time.Second)
	claimed, err := d.store.Get(context.Background(), 64)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, d.renewed(64, claimed.ExpiryUnixMs))

	// Starting right after a renewal and shorter than lease − margin − the retry cadence (2 s,
	// docs/leases.md#store-outages): issuing never stops. The store is frozen, not killed, so
	// that it answers again exactly when the outage ends: a restart of dynalite takes as long
	// again as the outage on a loaded machine, and the outage would then run past the fence.
	before, err := d.store.Get(context.Background(), 64)
	if err != nil {
		t.Fatal(err)
	}
	d.srv.Freeze()
	down := time.Now()
	time.Sleep(1500 * time.Millisecond) // the outage under test: 1.5 s
	during := a.idsSince(down.Add(1200 * time.Millisecond))
	d.srv.Thaw()
	if during == 0 || len(a.refusedSince(down)) != 0 {
		t.Fatalf("a 1.5 s outage stopped issuing: %d ids in its last 300 ms, refusals %v", during, a.refusedSince(down))
	}
	testenv.Eventually(t, 10*time.Second, d.renewed(64, before.ExpiryUnixMs)) // renewals succeed again

	// Longer: issuing stops at the fence, and resumes after the store returns. The first refusal
	// is "fence" when an ID is asked for at the fence, or "no_lease" when the keeper, whose own
	// clock reached the fence at the same moment, dropped the number first.
	d.srv.Kill()
	down = time.Now()
	testenv.Eventually(t, 6*time.Second, a.has(down, "fence", "no_lease"))
	fenced := time.Now()
	time.Sleep(2 * time.Second) // the outage under test goes on past the fence
	if n := a.idsSince(fenced.Add(50 * time.Millisecond)); n != 0 {
		t.Fatalf("%d ids issued past the fence during the outage", n)
	}
	t.Logf("outage at %v; refused after %v: %v", down.Format(time.TimeOnly), fenced.Sub(down).Round(time.Millisecond), a.refusedSince(down))
	d.srv.Restart(t)
	back := time.Now()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		n := a.idsSince(back)
		return n > 200, fmt.Sprintf("%d ids since the store came back, want 200", n)
	})
	a.stop()
	checkUnique(t, a)
}

func TestFaultSkewedClocks(t *testing.T) {
	d := startDynamo(t, false)
	// Each process holds the number for a 6 s window every 10.5 s, the slow one starting 5.5 s
	// after the fast one. A number the fast clock released carries an expiry 4 s ahead of the slow
	// clock, so the slow process claims it only 4 s after the release and issues for the rest of
	// its window; the fast one takes it back as soon as the slow one releases. Every round is a
	// handoff in each direction. (With 1.2 s windows started together, the slow process issued
	// only when it happened to claim first, and once went a minute without.)
	common := []string{"--range", "64-64", "--cycle", "6s", "--cycle-pause", "4500ms"}
	fast := startProc(t, "plus2s", d.args(append(common, "--test-clock-offset", "2s")...)...)
	time.Sleep(5500 * time.Millisecond)
	slow := startProc(t, "minus2s", d.args(append(common, "--test-clock-offset", "-2s")...)...)
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		fast.mu.Lock()
		slow.mu.Lock()
		defer fast.mu.Unlock()
		defer slow.mu.Unlock()
		return len(fast.batches) > 0 && len(slow.batches) > 0 && len(fast.holders) >= 3 && len(slow.holders) >= 3,
			fmt.Sprintf("batches %d and %d, holders %d and %d: want both processes to hold the number twice",
				len(fast.batches), len(slow.batches), len(fast.holders), len(slow.holders))
	})
	fast.stop()
	slow.stop()
	checkUnique(t, fast, slow)
}

func TestFaultQuarantine(t *testing.T) {
	d := startDynamo(t, false)
	a := startProc(t, "A", d.args("--range", "64-64")...)
	a.waitIDs(500, 20*time.Second)
	ctx := context.Background()
	before, err := d.store.Get(ctx, 64)
	if err != nil {
		t.Fatal(err)
	}
	fence := before.ExpiryUnixMs - 500
	q := time.Now() // before the write: A may refuse before this goroutine runs again
	if _, err := d.store.Quarantine(ctx, 64); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return len(a.refusedSince(q)) > 0, "A did not stop issuing"
	})
	time.Sleep(4 * time.Second) // the quarantine under test outlasts a lease: nobody claims it
	if last := maxOf(a.ids()).Time().UnixMilli(); last >= fence {
		t.Fatalf("A issued at %d, at or past its fence %d", last, fence)
	}
	if n := a.idsSince(time.Now().Add(-3 * time.Second)); n != 0 {
		t.Fatalf("A issued %d ids while the number was quarantined", n)
	}
	if r, _ := d.store.Get(ctx, 64); !r.Quarantined() {
		t.Fatalf("the quarantined number was claimed: %+v", r)
	}
	a.stop()
	checkUnique(t, a)
}

func TestFaultRestoreFromBackup(t *testing.T) {
	d := startDynamo(t, false)
	ctx := context.Background()
	a := startProc(t, "A", d.args("--range", "64-65")...)
	b := startProc(t, "B", d.args("--range", "64-65")...)
	a.waitIDs(500, 20*time.Second)
	b.waitIDs(500, 20*time.Second)

	// The backup: the rows as they were a moment ago, metadata row included.
	rows, err := d.store.List(ctx)
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows before the restore: %+v, %v", rows, err)
	}
	oldMeta, err := d.store.Meta(ctx) // the metadata row as the backup holds it: the old table, its rules
	oldID := oldMeta.TableID
	if err != nil {
		t.Fatal(err)
	}
	// The holders renew past the backup.
	for _, r := range rows {
		testenv.Eventually(t, 10*time.Second, d.renewed(r.Machine, r.ExpiryUnixMs))
	}
	restored := time.Now() // any refusal from here on is the restore's
	if err := dynamolease.DeleteTable(ctx, d.db, d.table); err != nil {
		t.Fatal(err)
	}
	if err := dynamolease.CreateTables(ctx, d.db, d.table, lease.TableHistory); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		putRow(t, d.db, d.table, r)
	}
	if err := d.store.SetMeta(ctx, oldMeta); err != nil {
		t.Fatal(err)
	}
	newID, _ := d.store.TableID(ctx)
	if newID == oldID {
		t.Fatalf("the re-created table kept its TableId %s", oldID)
	}
	// Every holder stops issuing when it sees the new TableId; nobody claims from the restored table.
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return len(a.refusedSince(restored)) > 0 && len(b.refusedSince(restored)) > 0,
			fmt.Sprintf("refusals since the restore: A %v, B %v; want both to stop", a.refusedSince(restored), b.refusedSince(restored))
	})
	time.Sleep(4 * time.Second) // the restored table under test outlives a lease: its stale rows expire, still no claim
	quiet := time.Now().Add(-3 * time.Second)
	if na, nb := a.idsSince(quiet), b.idsSince(quiet); na+nb != 0 {
		t.Fatalf("ids issued from a restored table before its fence: A %d, B %d", na, nb)
	}
	for _, m := range []int{64, 65} {
		r, _ := d.store.Get(ctx, m)
		if old := rows[m-64]; r.Epoch != old.Epoch {
			t.Fatalf("number %d was claimed from the restored table: %+v (backup %+v)", m, r, old)
		}
	}
	// The restore fence, then claims resume above it. It fences the two restored rows and writes
	// a fenced row for each of the other 510 numbers of the layout, which had none.
	fencedAt := time.Now()
	n, _, err := lease.FenceRestore(ctx, d.store, fencedAt, 512) // with the table's rules: 3 s and 500 ms
	if err != nil || n != 512 {
		t.Fatalf("FenceRestore = %d, %v; want 512 rows", n, err)
	}
	testenv.Eventually(t, 15*time.Second, func() (bool, string) {
		na, nb := a.idsSince(fencedAt), b.idsSince(fencedAt)
		return na > 200 && nb > 200, fmt.Sprintf("ids since the restore fence: A %d, B %d; want 200 each", na, nb)
	})
	a.stop()
	b.stop()
	checkUnique(t, a, b)
}

func putRow(t *testing.T, db *dynamodb.Client, table string, r lease.Row) {
	t.Helper()
	// A restore writes rows as the backup holds them: stale expiries, repeated epochs.
	if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: &table,
		Item:      dynamolease.Item(r),
	}); err != nil {
		t.Fatal(err)
	}
}
