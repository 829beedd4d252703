package regions_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
	"github.com/idgen/idgen/services/public-id/mapping/regions"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
)

// The test platform: three regions, a pair (r1, r2) and one more (r3, whose peer is r1).
var names = []string{"r1", "r2", "r3"}

var peers = map[string]string{"r1": "r2", "r2": "r1", "r3": "r1"}

// platform is a region's DynamoDB-compatible server each (dynalite, with the table), and, per
// region, the views of the processes that run there: a Store each, through links that a test can
// cut.
type platform struct {
	t     *testing.T
	srv   map[string]*testenv.Dynalite
	maker *publicid.Maker
	seq   atomic.Int64
	// callTimeout is the views' CallTimeout (set before opening them). By default it is
	// answerCallTimeout; a test that freezes a server, and so waits for a call timeout,
	// sets frozenCallTimeout.
	callTimeout time.Duration
}

// answerCallTimeout is a call timeout that a dynalite answering (a cut link or a killed server
// is refused at once) meets even on a loaded machine, where its answers take hundreds of
// milliseconds now and then; a call past it is ErrUnavailable, and a test that publishes and
// resolves through answering regions fails with "did not answer". It leaves the publish and
// resolve helpers' 5 s room for the calls of one operation.
const answerCallTimeout = 2 * time.Second

// frozenCallTimeout is the call timeout of a test that waits for a frozen server's: short, so
// that the waits it measures are.
const frozenCallTimeout = 400 * time.Millisecond

func newPlatform(t *testing.T) *platform {
	t.Helper()
	p := &platform{t: t, srv: map[string]*testenv.Dynalite{}, callTimeout: answerCallTimeout}
	for _, n := range names {
		p.srv[n] = testenv.StartDynaliteWithTables(t, "", dynamomap.Tables(dynamomap.DefaultTable))
	}
	var err error
	if p.maker, err = publicid.NewMaker("ord"); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *platform) createTable(n string) {
	p.t.Helper()
	if err := dynamomap.Tables(dynamomap.DefaultTable)(context.Background(), p.srv[n].Endpoint); err != nil {
		p.t.Fatal(err)
	}
}

// file is the regions file of a process in region local, whose view of each region goes to
// endpoint(region).
func (p *platform) file(local string, endpoint func(string) string) regions.File {
	f := regions.File{Region: local}
	for i, n := range names {
		f.Regions = append(f.Regions, regions.FileRegion{Name: n, Number: i + 1, Peer: peers[n], Endpoint: endpoint(n)})
	}
	return f
}

// view is one process's store in a region, and the links it reaches the regions by.
type view struct {
	*regions.Store
	links map[string]*link
	reg   *prometheus.Registry
}

// open returns a process's store in region local, filled when fill is set (a region that has
// always been there) and not otherwise (one that came back empty).
func (p *platform) open(local string, fill bool) *view {
	p.t.Helper()
	v := &view{links: map[string]*link{}, reg: prometheus.NewRegistry()}
	for _, n := range names {
		v.links[n] = newLink(p.t, strings.TrimPrefix(p.srv[n].Endpoint, "http://"))
	}
	f := p.file(local, func(n string) string { return "http://" + v.links[n].addr() })
	st, err := regions.Open(context.Background(), f, regions.Options{CallTimeout: p.callTimeout, HedgeAfter: 30 * time.Millisecond,
		SuspectFor: time.Second, NoteEvery: 100 * time.Millisecond, FillPage: 50, RepairEvery: 100 * time.Millisecond, Registerer: v.reg})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { st.Close() })
	v.Store = st
	if fill {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := st.Fill(ctx, 50*time.Millisecond); err != nil {
			p.t.Fatal(err)
		}
	}
	return v
}

// replica opens region n's own table directly (what it holds, not what the platform answers).
func (p *platform) replica(n string) *dynamomap.Store {
	p.t.Helper()
	st, err := dynamomap.Open(context.Background(), dynamomap.Target{Endpoint: p.srv[n].Endpoint}, dynamomap.Options{})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { st.Close() })
	return st
}

// id returns a new v2 internal ID made in region n (its number is its place in names + 1).
func (p *platform) id(n string) int64 {
	num := 0
	for i, m := range names {
		if m == n {
			num = i + 1
		}
	}
	seq := p.seq.Add(1)
	id, err := idcore.ScheduleV2().Compose(idcore.Parts{Timestamp: time.Since(idcore.Epoch).Milliseconds(), Region: num,
		Machine: int(seq>>10) % 512, Sequence: int(seq % 1024)})
	if err != nil {
		p.t.Fatal(err)
	}
	return int64(id)
}

func (p *platform) newPublic() (string, error) { return p.maker.New("ord") }

func publish(t *testing.T, s mapping.Store, p *platform, id int64) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pub, err := s.Publish(ctx, id, p.newPublic)
	if err != nil {
		t.Fatalf("publish %d: %v", id, err)
	}
	return pub
}

func resolve(s mapping.Store, pub string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.Resolve(ctx, pub)
}

// TestPublishedAnywhereResolvesEverywhere: a public ID published in any region resolves in every
// region at once (no wait between the publish and the resolves), and is held by its owner's and
// the owner's peer's tables only.
func TestPublishedAnywhereResolvesEverywhere(t *testing.T) {
	p := newPlatform(t)
	views := map[string]*view{}
	for _, n := range names {
		views[n] = p.open(n, true)
	}
	own := map[string]*dynamomap.Store{}
	for _, n := range names {
		own[n] = p.replica(n)
	}
	for _, from := range names {
		for _, owner := range names {
			id := p.id(owner)
			pub := publish(t, views[from], p, id)
			for _, in := range names {
				got, err := resolve(views[in], pub)
				if err != nil || got != id {
					t.Fatalf("published in %s (owner %s), resolved in %s: %d, %v; want %d", from, owner, in, got, err, id)
				}
			}
			for _, n := range names {
				_, err := resolve(own[n], pub)
				holds := err == nil
				if want := n == owner || n == peers[owner]; holds != want {
					t.Errorf("published in %s, owner %s: %s's table holds it: %v (err %v), want %v", from, owner, n, holds, err, want)
				}
			}
		}
	}
}

// TestSameInternalIDEverywhereAtOnce: one internal ID published in every region at once gets one
// public ID.
func TestSameInternalIDEverywhereAtOnce(t *testing.T) {
	p := newPlatform(t)
	var views []*view
	for _, n := range names {
		views = append(views, p.open(n, true))
	}
	for round := range 20 {
		id := p.id(names[round%len(names)])
		got := make([]string, len(views))
		var wg sync.WaitGroup
		for i, v := range views {
			wg.Go(func() { got[i] = publish(t, v, p, id) })
		}
		wg.Wait()
		for i := range got {
			if got[i] != got[0] {
				for _, v := range views {
					mfs, _ := v.reg.Gather()
					for _, mf := range mfs {
						for _, m := range mf.GetMetric() {
							if m.GetCounter().GetValue() > 0 && !strings.Contains(mf.GetName(), "fanouts") {
								t.Log(v.Local(), mf.GetName(), m.GetLabel(), m.GetCounter().GetValue())
							}
						}
					}
				}
				t.Fatalf("internal ID %d: %s got %s, %s got %s", id, names[0], got[0], names[i], got[i])
			}
		}
	}
}

// TestUnknownPublicID: an unknown public ID is not found when every region answered; with a
// region that does not answer it is unavailable, never not found (a mapping may be held by that
// region alone: the region that stood in for it is lost, say); a repeated unknown ID is answered
// by the negative cache.
func TestUnknownPublicID(t *testing.T) {
	p := newPlatform(t)
	p.open("r1", true)
	p.open("r2", true)
	v := p.open("r3", true)
	unknown, _ := p.newPublic()
	if _, err := resolve(v, unknown); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("unknown: %v, want not found", err)
	}
	if _, err := resolve(v, unknown); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("unknown again: %v, want not found", err)
	}
	if n := testenv.Gather(t, v.reg).Sum("idgen_publicid_fanouts_total", testenv.Labels{"result": "negative_cache"}); n != 1 {
		t.Errorf("negative cache answers: %v, want 1", n)
	}
	other, _ := p.newPublic()
	v.links["r1"].cut()
	if _, err := resolve(v, other); !errors.Is(err, mapping.ErrUnavailable) || errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("unknown, r1 cut: %v, want unavailable", err)
	}
	v.links["r1"].heal()
	if _, err := resolve(v, other); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("unknown, every region answering again: %v, want not found", err)
	}
}

// TestRegionLostAndRefilled: r2 is lost for good (its server killed, its data gone). Every
// acknowledged public ID still resolves in r1 and r3, and publishing goes on there. r2 comes back
// empty: until it is filled it acknowledges no publish, then it holds every mapping its region
// should and resolves every acknowledged one.
func TestRegionLostAndRefilled(t *testing.T) {
	p := newPlatform(t)
	views := map[string]*view{}
	for _, n := range names {
		views[n] = p.open(n, true)
	}
	acked := map[string]int64{}
	for i := range 150 {
		from, owner := names[i%3], names[(i/3)%3]
		id := p.id(owner)
		acked[publish(t, views[from], p, id)] = id
	}
	p.srv["r2"].Kill()
	for _, n := range []string{"r1", "r3"} {
		for pub, id := range acked {
			if got, err := resolve(views[n], pub); err != nil || got != id {
				t.Fatalf("r2 lost: %s in %s: %d, %v; want %d", pub, n, got, err, id)
			}
		}
	}
	for i := range 60 { // publishing goes on, r2's own IDs and its peer's too
		from, owner := []string{"r1", "r3"}[i%2], names[i%3]
		id := p.id(owner)
		acked[publish(t, views[from], p, id)] = id
	}
	// r2 comes back empty: a new server on its port, a new table, a new process.
	p.srv["r2"] = restartEmpty(t, p.srv["r2"])
	p.createTable("r2")
	back := p.open("r2", false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_, err := back.Publish(ctx, p.id("r2"), p.newPublic)
	cancel()
	if !errors.Is(err, regions.ErrFilling) {
		t.Fatalf("a publish in r2 before its fill: %v, want ErrFilling", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	res, err := back.Fill(ctx, 50*time.Millisecond)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	own := p.replica("r2")
	belong := 0
	for pub, id := range acked {
		if got, err := resolve(back, pub); err != nil || got != id {
			t.Fatalf("after the fill: %s in r2: %d, %v; want %d", pub, got, err, id)
		}
		owner := back.Owner(id)
		if owner == "r2" || peers[owner] == "r2" {
			belong++
			if got, err := resolve(own, pub); err != nil || got != id {
				t.Errorf("r2's own table after the fill: %s: %d, %v; want %d", pub, got, err, id)
			}
		}
	}
	if res.Copied < int64(belong) || res.Verified != res.Copied {
		t.Errorf("fill: %+v; %d acknowledged mappings belong in r2", res, belong)
	}
	publish(t, back, p, p.id("r2"))
	t.Logf("acknowledged %d, resolved in r1, r3 and the refilled r2, lost 0; fill %+v", len(acked), res)
}

// TestFillResumes: a fill stopped after some pages goes on from its note, and ends with the
// same mappings as one that never stopped.
func TestFillResumes(t *testing.T) {
	p := newPlatform(t)
	v1 := p.open("r1", true)
	p.open("r2", true)
	var ids []int64
	for range 400 {
		id := p.id("r1") // owner r1, peer r2: r2's table holds every one
		publish(t, v1, p, id)
		ids = append(ids, id)
	}
	p.srv["r1"] = restartEmpty(t, p.srv["r1"])
	p.createTable("r1")
	first := p.open("r1", false)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		for {
			m, err := testenv.GatherErr(first.reg)
			if err != nil {
				t.Error(err)
				return
			}
			if m.Sum("idgen_publicid_fill_mappings_total", nil) >= 120 {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	if _, err := first.Fill(ctx, 50*time.Millisecond); !errors.Is(err, context.Canceled) {
		t.Fatalf("a stopped fill: %v", err)
	}
	if first.Filled(context.Background()) {
		t.Fatal("a stopped fill marked the region filled")
	}
	second := p.open("r1", false)
	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := second.Fill(ctx, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.Copied < 400 || res.Copied >= 400+200 {
		t.Errorf("copied %d in all (the first fill's pages and the second's): want 400 and at most a page or two again", res.Copied)
	}
	own := p.replica("r1")
	for _, id := range ids {
		if _, err := own.Lookup(context.Background(), id); err != nil {
			t.Fatalf("r1's table after the resumed fill: %d: %v", id, err)
		}
	}
}

// TestPartitionOfAPair: r1 and r2 (a pair) cannot reach each other. Publishes go on in both,
// each acknowledged by two regions (r3 takes the cut peer's place); one internal ID published on
// each side one after the other gets one public ID (the second side finds the first's copy in
// r3); published on both sides at once it may get two, and each resolves to it in every region.
func TestPartitionOfAPair(t *testing.T) {
	p := newPlatform(t)
	v1, v2, v3 := p.open("r1", true), p.open("r2", true), p.open("r3", true)
	v1.links["r2"].cut()
	v2.links["r1"].cut()
	id := p.id("r1")
	a := publish(t, v1, p, id)
	b := publish(t, v2, p, id)
	if a != b {
		t.Errorf("one after the other across the partition: %s and %s", a, b)
	}
	for range 5 {
		id := p.id("r2")
		var pa, pb string
		var wg sync.WaitGroup
		wg.Go(func() { pa = publish(t, v1, p, id) })
		wg.Go(func() { pb = publish(t, v2, p, id) })
		wg.Wait()
		for _, v := range []*view{v1, v2, v3} {
			for _, pub := range []string{pa, pb} {
				if got, err := resolve(v, pub); err != nil || got != id {
					t.Fatalf("at once across the partition: %s in %s: %d, %v", pub, v.Local(), got, err)
				}
			}
		}
	}
	v1.links["r2"].heal()
	v2.links["r1"].heal()
}

// TestFrozenLocalStore: the local region's server frozen (SIGSTOP), a resolve is answered from the
// peer's copy within the hedge and a cross-region read, a publish is acknowledged by two other
// regions within two call timeouts, and an unknown ID is unavailable (the local region did not
// answer), within the call timeout.
func TestFrozenLocalStore(t *testing.T) {
	p := newPlatform(t)
	p.callTimeout = frozenCallTimeout
	v1 := p.open("r1", true)
	p.open("r2", true)
	p.open("r3", true)
	id := p.id("r1")
	pub := publish(t, v1, p, id)
	p.srv["r1"].Freeze()
	defer p.srv["r1"].Thaw()
	start := time.Now()
	if got, err := resolve(v1, pub); err != nil || got != id {
		t.Fatalf("frozen local: resolve: %d, %v", got, err)
	}
	if took := time.Since(start); took > 300*time.Millisecond {
		t.Errorf("frozen local: resolve took %v, want about the 30ms hedge", took)
	}
	start = time.Now()
	other := p.id("r1")
	pub2 := publish(t, v1, p, other)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("frozen local: publish took %v", took)
	}
	if got, err := resolve(v1, pub2); err != nil || got != other {
		t.Fatalf("frozen local: resolve of a publish made meanwhile: %d, %v", got, err)
	}
	unknown, _ := p.newPublic()
	start = time.Now()
	if _, err := resolve(v1, unknown); !errors.Is(err, mapping.ErrUnavailable) || errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("frozen local: unknown: %v, want unavailable", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("frozen local: an unknown ID took %v", took)
	}
}

// TestStandInRepaired: r2 (the owner's peer) does not answer r1's publish, so r3 stands in; once
// r2 answers again the copy is made there too, so that r3 lost for good leaves the mapping in the
// two regions it belongs to (those a fill restores) and it resolves in r2 from r2's own table.
func TestStandInRepaired(t *testing.T) {
	p := newPlatform(t)
	v1 := p.open("r1", true)
	p.open("r2", true)
	p.open("r3", true)
	v1.links["r2"].cut()
	id := p.id("r1")
	pub := publish(t, v1, p, id)
	r2 := p.replica("r2")
	if _, err := resolve(r2, pub); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("r2's table while cut off: %v", err)
	}
	if _, err := resolve(p.replica("r3"), pub); err != nil {
		t.Fatalf("r3's table, standing in: %v", err)
	}
	// queued (the repair loop may be trying it at this moment, so not counted as pending)
	if n := testenv.Gather(t, v1.reg).Sum("idgen_publicid_repairs_total", testenv.Labels{"result": "queued"}); n != 1 {
		t.Fatalf("repairs queued: %v, want 1", n)
	}
	v1.links["r2"].heal()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		got, err := resolve(r2, pub)
		return err == nil && got == id, fmt.Sprint(got, err, " pending ", v1.Repairs())
	})
	if v1.Repairs() != 0 {
		t.Errorf("repairs pending after the copy: %d", v1.Repairs())
	}
}

// restartEmpty kills a server and starts a new one, empty, on its port (a region lost for good
// and built again).
func restartEmpty(t *testing.T, d *testenv.Dynalite) *testenv.Dynalite {
	t.Helper()
	d.Kill()
	nd, err := testenv.NewDynalite(d.Port, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nd.Stop)
	return nd
}

// link is a TCP path from a process to a region's server that a test can cut: cut closes its
// connections and refuses new ones (a partition), heal lets them through again.
type link struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]bool
}

func newLink(t *testing.T, target string) *link {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k := &link{l: l, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { l.Close(); k.cut() })
	go k.serve()
	return k
}

func (k *link) addr() string { return k.l.Addr().String() }

func (k *link) serve() {
	for {
		c, err := k.l.Accept()
		if err != nil {
			return
		}
		k.mu.Lock()
		down := k.down
		if !down {
			k.conns[c] = true
		}
		k.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		go k.pass(c)
	}
}

func (k *link) pass(c net.Conn) {
	u, err := net.Dial("tcp", k.target)
	if err != nil {
		c.Close()
		return
	}
	k.mu.Lock()
	k.conns[u] = true
	k.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(u, c); done <- struct{}{} }()
	go func() { io.Copy(c, u); done <- struct{}{} }()
	<-done
	c.Close()
	u.Close()
}

func (k *link) cut() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.down = true
	for c := range k.conns {
		c.Close()
	}
	clear(k.conns)
}

func (k *link) heal() {
	k.mu.Lock()
	k.down = false
	k.mu.Unlock()
}

// TestRegionNumberZero: the registry's first region has number 0 (us-east-1 in the default
// five): the regions file takes it, and a v2 ID carrying 0 is owned by that region, not by the
// lowest-numbered one by default.
func TestRegionNumberZero(t *testing.T) {
	srv := testenv.StartDynaliteWithTables(t, "", dynamomap.Tables("zero", "one", "two"))
	f := regions.File{Region: "us-west-2", Regions: []regions.FileRegion{
		{Name: "us-west-2", Number: 1, Peer: "us-east-1", Endpoint: srv.Endpoint, Table: "one"},
		{Name: "us-east-1", Number: 0, Peer: "us-west-2", Endpoint: srv.Endpoint, Table: "zero"},
		{Name: "eu-west-1", Number: 2, Peer: "us-east-1", Endpoint: srv.Endpoint, Table: "two"},
	}}
	st, err := regions.Open(context.Background(), f, regions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for num, want := range map[int]string{0: "us-east-1", 1: "us-west-2", 2: "eu-west-1"} {
		id, err := idcore.ScheduleV2().Compose(idcore.Parts{Timestamp: time.Since(idcore.Epoch).Milliseconds(), Region: num, Machine: 3, Sequence: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Owner(int64(id)); got != want {
			t.Errorf("owner of a v2 ID of region number %d: %s, want %s", num, got, want)
		}
	}
	f.Regions[1].Number = -1
	if err := f.Check(); err == nil || !strings.Contains(err.Error(), "number -1") {
		t.Errorf("number -1: %v", err)
	}
}
