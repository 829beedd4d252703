package backfill_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/conn/dynamo"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/backfill"
	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/idgen/idgen/services/public-id/mapping/regions"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
)

// fill publishes n mappings in a Redis store and returns them.
func fill(t *testing.T, s *redismap.Store, first int64, n int) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	maker, _ := publicid.NewMaker("ord")
	var mu sync.Mutex
	want := map[string]int64{}
	var g errgroup.Group
	g.SetLimit(16)
	for i := range int64(n) {
		g.Go(func() error {
			pub, err := s.Publish(ctx, first+i, func() (string, error) { return maker.New("ord") })
			mu.Lock()
			want[pub] = first + i
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return want
}

func openRedis(t *testing.T) *redismap.Store {
	t.Helper()
	r := testenv.StartRedis(t, t.TempDir())
	s, err := redismap.New(context.Background(), redis.NewClient(&redis.Options{Addr: r.Addr}), redismap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openDynamo(t *testing.T) *dynamomap.Store {
	t.Helper()
	ctx := context.Background()
	srv := testenv.StartDynaliteWithTables(t, "", dynamomap.Tables(dynamomap.DefaultTable))
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(srv.Endpoint, srv.Tail(30))
		}
	})
	db, err := dynamo.NewClient(ctx, srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	s, err := dynamomap.Open(ctx, dynamomap.Target{Endpoint: srv.Endpoint}, dynamomap.Options{Client: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// cancelling is a target that cancels a context on its nth Copy (a run stopped mid-page).
type cancelling struct {
	mapping.Replica
	n      atomic.Int64
	at     int64
	cancel context.CancelFunc
}

func (c *cancelling) Copy(ctx context.Context, internal int64, public string) (string, error) {
	if c.n.Add(1) == c.at {
		c.cancel()
	}
	return c.Replica.Copy(ctx, internal, public)
}

func checkCounts(t *testing.T, c backfill.Counts) {
	t.Helper()
	if c.Scanned != c.Verified+c.Failed || c.Copied+c.AlreadyPresent > c.Scanned || c.Differing > c.Verified {
		t.Fatalf("counts do not add up: %+v", c)
	}
}

// TestStoppedAndResumed: a backfill of 3,000 mappings from a real Redis into dynalite, stopped
// twice (its context cancelled after some pages, and in the middle of a page), each time resumed
// from its state file, ends with every mapping resolving in DynamoDB to its internal ID and
// looked up as its public ID, and counts that add up.
func TestStoppedAndResumed(t *testing.T) {
	src, dst := openRedis(t), openDynamo(t)
	want := fill(t, src, 1_000_000, 3000)
	path := filepath.Join(t.TempDir(), "state.json")
	saves := 0
	save := func(st backfill.State) error {
		saves++
		return backfill.SaveFile(path, backfill.FileState{From: "redis", To: "dynamodb", State: st})
	}
	load := func() backfill.State {
		fst, ok, err := backfill.LoadFile(path)
		if err != nil || !ok {
			t.Fatalf("LoadFile: %v, %v", ok, err)
		}
		return fst.State
	}
	o := backfill.Options{PageSize: 100, Save: save}

	// Stopped after the fifth page's save.
	ctx, cancel := context.WithCancel(context.Background())
	o.Save = func(st backfill.State) error {
		err := save(st)
		if st.Counts.Pages == 5 {
			cancel()
		}
		return err
	}
	st, err := backfill.Run(ctx, src, dst, backfill.State{}, o)
	if !errors.Is(err, context.Canceled) || st.Done || st.Counts.Pages != 5 {
		t.Fatalf("the first run: %v, %+v", err, st.Counts)
	}
	if got := load(); got.Cursor != st.Cursor || got.Counts != st.Counts {
		t.Fatalf("the state file holds %+v, the run ended at %+v", got.Counts, st.Counts)
	}
	checkCounts(t, st.Counts)

	// Stopped in the middle of a page: the page is not saved, and is copied again.
	ctx, cancel = context.WithCancel(context.Background())
	o.Save = save
	before := load()
	mid := &cancelling{Replica: dst, at: 350, cancel: cancel}
	st, err = backfill.Run(ctx, src, mid, before, o)
	if !errors.Is(err, context.Canceled) || st.Done {
		t.Fatalf("the second run: %v, %+v", err, st.Counts)
	}
	if got := load(); got.Cursor != st.Cursor || got.Counts != st.Counts || got.Counts.Pages <= before.Counts.Pages {
		t.Fatalf("the state file holds %+v, the run ended at %+v", got.Counts, st.Counts)
	}

	// Resumed to the end.
	st, err = backfill.Run(context.Background(), src, dst, load(), o)
	if err != nil || !st.Done {
		t.Fatalf("the last run: %v, %+v", err, st.Counts)
	}
	if got := load(); !got.Done || got.Counts != st.Counts {
		t.Fatalf("the state file after the end: %+v", got)
	}
	c := st.Counts
	checkCounts(t, c)
	t.Logf("counts %+v after %d saves", c, saves)
	if c.Failed != 0 || c.Differing != 0 || c.Scanned < int64(len(want)) || c.Copied > int64(len(want)) || c.AlreadyPresent == 0 {
		t.Fatalf("counts %+v for %d mappings, stopped mid-page once", c, len(want))
	}
	ctx = context.Background()
	for pub, in := range want {
		if got, err := dst.Resolve(ctx, pub); err != nil || got != in {
			t.Fatalf("DynamoDB resolves %s to %d, %v; want %d", pub, got, err, in)
		}
		if got, err := dst.Lookup(ctx, in); err != nil || got != pub {
			t.Fatalf("DynamoDB looks %d up as %s, %v; want %s", in, got, err, pub)
		}
	}
	// A run from a done state does nothing.
	if again, err := backfill.Run(ctx, src, dst, st, o); err != nil || again.Counts != st.Counts {
		t.Fatalf("a run from a done state: %v, %+v", err, again.Counts)
	}
}

// TestDifferingAndConflicts: an internal ID that has another public ID in the target is copied
// (both resolve), verified and counted differing; a public ID the target maps to another
// internal ID is a failure, listed, and the run goes on.
func TestDifferingAndConflicts(t *testing.T) {
	ctx := context.Background()
	src, dst := openRedis(t), openDynamo(t)
	want := fill(t, src, 5000, 50)
	var diffPub, conflictPub string
	for pub, in := range want {
		switch {
		case diffPub == "":
			diffPub = pub
			if _, err := dst.Publish(ctx, in, func() (string, error) { return "ord_targetsown", nil }); err != nil {
				t.Fatal(err)
			}
		case conflictPub == "":
			conflictPub = pub
			if _, err := dst.Copy(ctx, 999_999, pub); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, err := backfill.Run(ctx, src, dst, backfill.State{}, backfill.Options{PageSize: 7})
	if err != nil || !st.Done {
		t.Fatal(err)
	}
	c := st.Counts
	checkCounts(t, c)
	if c.Scanned != 50 || c.Failed != 1 || c.Differing != 1 || c.Verified != 49 || c.Copied != 49 {
		t.Fatalf("counts %+v", c)
	}
	if len(st.Failures) != 1 || st.Failures[0].Public != conflictPub || !strings.Contains(st.Failures[0].Error, mapping.ErrConflict.Error()) {
		t.Fatalf("failures %+v", st.Failures)
	}
	if len(st.Differences) != 1 || st.Differences[0].Public != diffPub || st.Differences[0].Target != "ord_targetsown" {
		t.Fatalf("differences %+v", st.Differences)
	}
	if got, err := dst.Resolve(ctx, diffPub); err != nil || got != want[diffPub] {
		t.Fatalf("the differing public ID resolves to %d, %v", got, err)
	}
	if got, _ := dst.Resolve(ctx, conflictPub); got != 999_999 {
		t.Fatalf("a conflicting copy overwrote the target's mapping: %d", got)
	}
}

// TestTargetUnavailable: a target that stops answering ends the run with mapping.ErrUnavailable
// once its retries are spent, at the last saved page; after the target is back, a run from that
// state copies the rest, and every mapping resolves.
func TestTargetUnavailable(t *testing.T) {
	ctx := context.Background()
	src := openRedis(t)
	want := fill(t, src, 7000, 600)
	srv := testenv.StartDynaliteWithTables(t, t.TempDir(), dynamomap.Tables(dynamomap.DefaultTable))
	db, err := dynamo.NewClient(ctx, srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := dynamomap.Open(ctx, dynamomap.Target{}, dynamomap.Options{Client: db})
	if err != nil {
		t.Fatal(err)
	}
	var saved backfill.State
	o := backfill.Options{PageSize: 50, Retries: 1, Save: func(st backfill.State) error {
		saved = st
		if st.Counts.Pages == 3 {
			srv.Stop()
		}
		return nil
	}}
	st, err := backfill.Run(ctx, src, dst, backfill.State{}, o)
	if !errors.Is(err, mapping.ErrUnavailable) || st.Counts.Pages != 3 || st.Cursor != saved.Cursor || st.Done {
		t.Fatalf("a run whose target stopped: %v, %+v", err, st.Counts)
	}
	srv.Restart(t)
	st, err = backfill.Run(ctx, src, dst, st, o)
	if err != nil || !st.Done {
		t.Fatalf("the run after the target came back: %v, %+v", err, st.Counts)
	}
	checkCounts(t, st.Counts)
	if st.Counts.Failed != 0 || st.Counts.Scanned < int64(len(want)) {
		t.Fatalf("counts %+v", st.Counts)
	}
	for pub, in := range want {
		if got, err := dst.Resolve(ctx, pub); err != nil || got != in {
			t.Fatalf("DynamoDB resolves %s to %d, %v; want %d", pub, got, err, in)
		}
	}
}

// TestFromCluster: a backfill from a three-master Redis Cluster, stopped after some pages and
// resumed, copies every master's mappings.
func TestFromCluster(t *testing.T) {
	addrs := testenv.StartRedisCluster(t)
	src, err := redismap.New(context.Background(), redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}), redismap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	dst := openDynamo(t)
	want := fill(t, src, 9000, 800)
	ctx, cancel := context.WithCancel(context.Background())
	o := backfill.Options{PageSize: 30, Save: func(st backfill.State) error {
		if st.Counts.Pages == 4 {
			cancel()
		}
		return nil
	}}
	st, err := backfill.Run(ctx, src, dst, backfill.State{}, o)
	if !errors.Is(err, context.Canceled) || st.Counts.Pages != 4 {
		t.Fatalf("the first run: %v, %+v", err, st.Counts)
	}
	o.Save = nil
	if st, err = backfill.Run(context.Background(), src, dst, st, o); err != nil || !st.Done {
		t.Fatalf("the resumed run: %v, %+v", err, st.Counts)
	}
	checkCounts(t, st.Counts)
	if st.Counts.Failed != 0 || st.Counts.Scanned < int64(len(want)) {
		t.Fatalf("counts %+v", st.Counts)
	}
	for pub, in := range want {
		if got, err := dst.Resolve(context.Background(), pub); err != nil || got != in {
			t.Fatalf("DynamoDB resolves %s to %d, %v; want %d", pub, got, err, in)
		}
	}
}

// TestIntoEveryRegion: a Redis store's mappings backfilled into the regions' tables (--to
// regions:FILE) resolve in every region, each held by its owner's and the owner's peer's table.
func TestIntoEveryRegion(t *testing.T) {
	ctx := context.Background()
	src := openRedis(t)
	// Internal IDs 1…: v2 IDs of region number 0, which no region has: owned by the region of the
	// lowest number, r1, whose peer is r2.
	want := fill(t, src, 1, 300)
	names := []string{"r1", "r2", "r3"}
	peers := map[string]string{"r1": "r2", "r2": "r1", "r3": "r1"}
	own := map[string]*dynamomap.Store{}
	f := regions.File{Region: "r3"}
	for i, n := range names {
		own[n] = openDynamo(t)
		f.Regions = append(f.Regions, regions.FileRegion{Name: n, Number: i + 1, Peer: peers[n], Endpoint: endpointOf(t, own[n])})
	}
	var stores []*regions.Store
	for _, n := range names {
		f.Region = n
		st, err := regions.Open(ctx, f, regions.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if _, err := st.Fill(ctx, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, st)
	}
	st, err := backfill.Run(ctx, src, stores[2], backfill.State{}, backfill.Options{PageSize: 50})
	if err != nil || !st.Done {
		t.Fatalf("backfill into the regions: %+v, %v", st, err)
	}
	checkCounts(t, st.Counts)
	if st.Counts.Verified != int64(len(want)) || st.Counts.Failed != 0 {
		t.Fatalf("counts %+v; want %d verified", st.Counts, len(want))
	}
	for pub, id := range want {
		for i, s := range stores {
			if got, err := s.Resolve(ctx, pub); err != nil || got != id {
				t.Fatalf("%s in %s: %d, %v; want %d", pub, names[i], got, err, id)
			}
		}
		for n, o := range own {
			_, err := o.Resolve(ctx, pub)
			if holds, wantHeld := err == nil, n == "r1" || n == "r2"; holds != wantHeld {
				held := map[string]bool{}
				for m, o2 := range own {
					_, e := o2.Resolve(ctx, pub)
					held[m] = e == nil
				}
				t.Fatalf("%s (%d, owner %s): %s's table holds it: %v, want %v; held %v", pub, id, stores[0].Owner(id), n, holds, wantHeld, held)
			}
		}
	}
}

func endpointOf(t *testing.T, s *dynamomap.Store) string {
	t.Helper()
	e := s.Client().Options().BaseEndpoint
	if e == nil {
		t.Fatal("a store without an endpoint")
	}
	return *e
}
