package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/localstack/dynalite"
)

// The store faults: dynalite frozen or killed, and a group's store restored from a backup.

// storeStop freezes dynalite with SIGSTOP, then resumes it: store-stop-short for 0.3 s up to the
// outage bound (an outage no holder sees), store-stop-long for lease − margin + 0.5 s up to twice
// the lease (every holder reaches its fence).
type storeStop struct {
	long bool
	dur  time.Duration
}

func (f *storeStop) Name() string {
	if f.long {
		return "store-stop-long"
	}
	return "store-stop-short"
}

func (f *storeStop) plan(d *draw) time.Duration {
	if f.long {
		f.dur = d.between(leaseLen-margin+500*time.Millisecond, 2*leaseLen)
	} else {
		f.dur = d.between(300*time.Millisecond, outageBound)
	}
	return f.dur
}

func (f *storeStop) Inject(ctx context.Context, r *runner) (string, error) {
	r.dyn.Freeze()
	sleep(ctx, f.dur)
	r.dyn.Thaw()
	return fmt.Sprintf("dynalite frozen %s", f.dur.Round(time.Millisecond)), nil
}

// storeKill9 kills dynalite with SIGKILL and starts it again on the same port and data after
// 0.5 s to twice the lease.
type storeKill9 struct{ down time.Duration }

func (f *storeKill9) Name() string { return "store-kill9" }

func (f *storeKill9) plan(d *draw) time.Duration {
	f.down = d.between(500*time.Millisecond, 2*leaseLen)
	return f.down
}

func (f *storeKill9) Inject(ctx context.Context, r *runner) (string, error) {
	r.dyn.Kill()
	sleep(ctx, f.down)
	return fmt.Sprintf("dynalite killed, restarted after %s", f.down.Round(time.Millisecond)), r.dyn.Start()
}

// restoreBackup puts a group's last backup back, as a restore does, runs the restore fence with
// idgenctl, and takes the next backup. The groups take turns, dynalite's first: its first backup
// is from before the first claim.
type restoreBackup struct{ group int }

func (f *restoreBackup) Name() string { return "restore-backup" }

func (f *restoreBackup) plan(d *draw) time.Duration {
	d.group() // drawn and left unused, so the schedule of a seed stays the same
	f.group = d.restores % d.ngroups
	d.restores++
	return 2 * time.Second // the fence's own wait is not planned for
}

func (f *restoreBackup) Inject(ctx context.Context, r *runner) (string, error) {
	g := r.groups[f.group]
	if g.backup == "" {
		if err := r.takeBackup(ctx, g); err != nil {
			return fmt.Sprintf("%s: no backup yet (%v): skipped", g.name, err), nil
		}
		return fmt.Sprintf("%s: first backup taken; restored next time", g.name), nil
	}
	age := time.Since(g.backedUp).Round(100 * time.Millisecond)
	var desc string
	var err error
	if g.name == "sqlite" {
		desc, err = r.restoreSQLite(ctx, g, age)
	} else {
		desc, err = r.restoreDynamo(ctx, g, age)
	}
	if err != nil {
		return "", err
	}
	if err := r.takeBackup(ctx, g); err != nil {
		desc += fmt.Sprintf(" (next backup: %v)", err)
	}
	return desc, nil
}

// restoreSQLite restores one host's file: the group's processes are stopped (SIGTERM), the backup
// file is copied over the lease file, idgenctl leases fence-restore runs, and the processes start
// again.
func (r *runner) restoreSQLite(ctx context.Context, g *group, age time.Duration) (string, error) {
	path := strings.TrimPrefix(g.storeArg, "sqlite:")
	var hw sync.WaitGroup
	for _, p := range g.procs {
		hw.Go(p.hold)
	}
	hw.Wait()
	for _, suffix := range []string{"-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	if out, err := exec.Command("cp", g.backup, path).CombinedOutput(); err != nil {
		return "", fmt.Errorf("restore %s: %v: %s", path, err, out)
	}
	out, err := r.idgenctl(ctx, g, "fence-restore")
	for _, p := range g.procs {
		if rerr := p.resume(); rerr != nil && err == nil {
			err = rerr
		}
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("sqlite: processes stopped, file restored from a backup %s old, started again; idgenctl: %s", age, lastLine(out)), nil
}

// restoreDynamo replaces the lease table by a new one (a new TableId) holding the backup's items,
// as a DynamoDB restore does; the items are read from the backup of dynalite's data folder
// through a second dynalite. The processes run on: holders see the TableId change, and nobody may
// claim from the restored table until its fence.
//
// A claim can still land in the restored table: one whose holder checked the table it replaced,
// then paused (here: frozen while the table is replaced, or its request in flight) and sent the
// conditional write to the new table. The keeper checks the table again after the claim's history
// event and issues nothing under it (lease.Keeper.claim). So the restored table may gain rows
// before its fence; what must not happen is a claim whose check passed on the restored table. The
// history, which a restore leaves alone, says which table each claim was checked against: after
// the fence, no claim event from before it may name the restored table's TableId.
func (r *runner) restoreDynamo(ctx context.Context, g *group, age time.Duration) (string, error) {
	items, err := r.readBackup(ctx, g.backup)
	if err != nil {
		return "", err
	}
	before, _ := g.store.TableID(ctx)
	restoredAt := time.Now()
	signal := func(sig syscall.Signal) func() {
		return func() {
			for _, p := range g.procs {
				p.signal(sig)
			}
		}
	}
	if err := replaceTable(ctx, r.db, items, signal(syscall.SIGSTOP), signal(syscall.SIGCONT)); err != nil {
		return "", err
	}
	after, err := g.store.TableID(ctx)
	if err != nil {
		return "", err
	}
	// Two renew intervals on the restored table before its fence: every holder renews at least
	// once and finds the table changed; a spare tries to claim.
	sleep(ctx, 2*renew)
	rows, err := g.store.List(ctx)
	if err != nil {
		return "", err
	}
	fencing := time.Now()
	out, err := r.idgenctl(ctx, g, "fence-restore")
	if err != nil {
		return "", err
	}
	passed, raced, err := claimsOnRestore(ctx, g, restoredAt.Add(-leaseLen), fencing, after, rows)
	if err != nil {
		return "", err
	}
	if len(passed) > 0 {
		ev := passed[0]
		return "", fmt.Errorf("dynamo: %d claims checked against the restored table %s before its fence (number %d by %s, epoch %d, at %s): a claim on a restored table",
			len(passed), after, ev.Machine, ev.Holder, ev.Epoch, time.UnixMilli(ev.AtUnixMs).UTC().Format("15:04:05.000"))
	}
	backupRows := 0
	for _, it := range items {
		if !isMeta(it) {
			backupRows++
		}
	}
	landed := ""
	if n := len(rows) - backupRows; n > 0 {
		landed = fmt.Sprintf(" (%d rows gained, %d of them claims checked against the table it replaced, which issued nothing)", n, raced)
	}
	return fmt.Sprintf("dynamo: table replaced by a backup %s old (%d items, TableId %.8s… → %.8s…), no claim from it in %s%s; idgenctl: %s",
		age, backupRows, before, after, 2*renew, landed, lastLine(out)), nil
}

// replaceTable replaces the lease table by a new one (a new TableId) holding items, as a
// DynamoDB restore does. A DynamoDB restore is never seen half done: the table is absent, then
// holds every item of the backup. Here the table is made anew and filled item by item, so the
// metadata row goes in first (it names the old table: claims are refused from then on), and pause
// and resume (the group's processes frozen and resumed) bracket the delete until it is in, so
// that no process sees the empty table in between, which would look like a new one.
func replaceTable(ctx context.Context, db *dynamodb.Client, items []map[string]types.AttributeValue, pause, resume func()) error {
	items = slices.Clone(items)
	sort.SliceStable(items, func(i, j int) bool { return isMeta(items[i]) && !isMeta(items[j]) })
	pause()
	err := dynamolease.DeleteTable(ctx, db, lease.TableV2)
	if err == nil {
		err = dynamolease.CreateTables(ctx, db, lease.TableV2, lease.TableHistory)
	}
	if err == nil && len(items) > 0 && isMeta(items[0]) {
		_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: ptr(lease.TableV2), Item: items[0]})
		items = items[1:]
	}
	resume()
	if err != nil {
		return err
	}
	for _, it := range items {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: ptr(lease.TableV2), Item: it}); err != nil {
			return err
		}
	}
	return nil
}

// claimsOnRestore reads the history of g's numbers from from to until: the claims checked
// against table tid (a restored table, until its fence), and how many of the rows in that table
// before the fence come from claims checked against another table.
func claimsOnRestore(ctx context.Context, g *group, from, until time.Time, tid string, rows []lease.Row) (passed []lease.Event, raced int, err error) {
	held := map[[2]int64]string{}
	for _, row := range rows {
		held[[2]int64{int64(row.Machine), row.Epoch}] = row.Holder
	}
	for _, m := range g.machines {
		evs, err := g.store.History(ctx, m, from.UnixMilli(), until.UnixMilli())
		if err != nil {
			return nil, 0, err
		}
		for _, ev := range evs {
			switch {
			case ev.Kind != lease.KindClaim:
			case ev.TableID == tid:
				passed = append(passed, ev)
			case held[[2]int64{int64(m), ev.Epoch}] == ev.Holder:
				raced++
			}
		}
	}
	return passed, raced, nil
}

// takeBackup backs g's store up: SQLite with VACUUM INTO (an online, consistent copy of the
// file), dynalite by copying its data folder while it is frozen. Backups are taken at any moment:
// before the first claim (the first ones), before a number's row, or after.
func (r *runner) takeBackup(ctx context.Context, g *group) error {
	dst := filepath.Join(r.work, "backup-"+g.name)
	if g.name == "sqlite" {
		path := strings.TrimPrefix(g.storeArg, "sqlite:")
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			return err
		}
		defer db.Close()
		os.Remove(dst)
		if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
			return fmt.Errorf("backup %s: %w", path, err)
		}
	} else if err := backupDynalite(r.dyn, dst); err != nil {
		return err
	}
	g.backup, g.backedUp = dst, time.Now()
	return nil
}

// readBackup reads the lease table's items from a copy of dynalite's data folder, through a
// second dynalite started on it.
func (r *runner) readBackup(ctx context.Context, dir string) ([]map[string]types.AttributeValue, error) {
	copyDir := dir + "-read"
	os.RemoveAll(copyDir)
	if out, err := exec.Command("cp", "-a", dir, copyDir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy backup: %v: %s", err, out)
	}
	defer os.RemoveAll(copyDir)
	d, err := dynalite.New(0, copyDir)
	if err != nil {
		return nil, err
	}
	defer d.Kill()
	db, err := dynamolease.NewClient(ctx, d.Endpoint)
	if err != nil {
		return nil, err
	}
	var items []map[string]types.AttributeValue
	var start map[string]types.AttributeValue
	for {
		out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: ptr(lease.TableV2), ExclusiveStartKey: start, ConsistentRead: ptr(true)})
		if err != nil {
			return nil, fmt.Errorf("read backup: %w", err)
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return items, nil
		}
		start = out.LastEvaluatedKey
	}
}

// backupDynalite copies d's data folder to dst while d is frozen (a consistent copy).
func backupDynalite(d *dynalite.Server, dst string) error {
	d.Freeze()
	defer d.Thaw()
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-a", d.Path, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("copy %s: %v: %s", d.Path, err, out)
	}
	return nil
}

// isMeta reports whether a lease-table item is the metadata row.
func isMeta(it map[string]types.AttributeValue) bool {
	n, ok := it["machine_id"].(*types.AttributeValueMemberN)
	return ok && n.Value == strconv.Itoa(lease.MetaMachine)
}

func ptr[T any](v T) *T { return &v }
