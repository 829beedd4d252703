package regions_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/regions"
	"github.com/prometheus/client_golang/prometheus"
)

// openWith is open with the regions file changed by edit first; it runs no fill (the local
// region's note says whether it is filled).
func (p *platform) openWith(local string, edit func(*regions.File)) *view {
	p.t.Helper()
	v := &view{links: map[string]*link{}, reg: prometheus.NewRegistry()}
	for _, n := range names {
		v.links[n] = newLink(p.t, strings.TrimPrefix(p.srv[n].Endpoint, "http://"))
	}
	f := p.file(local, func(n string) string { return "http://" + v.links[n].addr() })
	edit(&f)
	st, err := regions.Open(context.Background(), f, regions.Options{CallTimeout: p.callTimeout, HedgeAfter: 30 * time.Millisecond,
		SuspectFor: time.Second, NoteEvery: 100 * time.Millisecond, FillPage: 50, Registerer: v.reg})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { st.Close() })
	v.Store = st
	return v
}

// settle brings a view's readings of the other regions' fill notes up to date: a reading is
// taken again in the background by the first call after NoteEvery, which still answers from the
// old one (a view opened before another region's fill counts that region as not filled once).
func settle(t *testing.T, vs ...*view) {
	t.Helper()
	time.Sleep(150 * time.Millisecond) // past NoteEvery since the views' own readings
	for _, v := range vs {
		unknown := "ord_settle" + strings.Repeat("x", 14)
		_, _ = resolve(v, unknown)
	}
	time.Sleep(300 * time.Millisecond)
}

// TestLookupGivesOutOnlyAcknowledgedMappings: a publish whose copies cannot be written is not
// acknowledged, but its public ID stays in the table that chose it; a Lookup (the gateway's
// question before it publishes) must not hand that public ID out as if it were acknowledged,
// since it is then held by one region only and lost with it.
func TestLookupGivesOutOnlyAcknowledgedMappings(t *testing.T) {
	p := newPlatform(t)
	v1 := p.open("r1", true)
	v2 := p.open("r2", true)
	p.open("r3", true)
	settle(t, v1, v2)
	v1.links["r2"].cut()
	v1.links["r3"].cut()
	id := p.id("r1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := v1.Publish(ctx, id, p.newPublic); !errors.Is(err, mapping.ErrUnavailable) {
		t.Fatalf("a publish with r2 and r3 cut: %v, want unavailable (not acknowledged)", err)
	}
	pub, err := v1.Lookup(ctx, id)
	if err != nil {
		return // not handed out: what the contract wants
	}
	t.Errorf("Lookup handed out %s, which only r1's table holds (the publish was refused as short)", pub)
	// The gateway puts it in a response; r1 is then lost.
	p.srv["r1"].Kill()
	if got, err := resolve(v2, pub); err != nil || got != id {
		t.Errorf("r1 lost: the public id the gateway gave out resolves in r2 to %d, %v (not found: %v)", got, err, errors.Is(err, mapping.ErrNotFound))
	}
}

// TestRepublishWritesNothing: publishing an internal ID that has its public ID in its owner's and
// its peer's tables costs the lookups only (docs/public-ids.md), no write to any region.
func TestRepublishWritesNothing(t *testing.T) {
	p := newPlatform(t)
	v1 := p.open("r1", true)
	p.open("r2", true)
	p.open("r3", true)
	id := p.id("r1")
	pub := publish(t, v1, p, id)
	before := testenv.Gather(t, v1.reg).Sum("idgen_publicid_region_calls_total", testenv.Labels{"op": "copy"})
	for range 5 {
		if again := publish(t, v1, p, id); again != pub {
			t.Fatalf("published again: %s, want %s", again, pub)
		}
	}
	if n := testenv.Gather(t, v1.reg).Sum("idgen_publicid_region_calls_total", testenv.Labels{"op": "copy"}) - before; n != 0 {
		t.Errorf("five publishes of a mapping both its regions hold made %v copy calls (each two PutItems and a GetItem, to another region)", n)
	}
}

// TestUnknownWhileARegionRefusesRequests: a region whose table answers every call with a client
// error (an IAM policy or a table name gone wrong there; here a table name DynamoDB refuses) is
// one region not answering: an unknown public ID is answered as when that region is down (503
// store_unavailable), not with that region's error (a 500 in every region), and a new internal
// ID owned by that region is published as when it is down (another region stands in).
func TestUnknownWhileARegionRefusesRequests(t *testing.T) {
	p := newPlatform(t)
	p.open("r1", true) // r1's table is filled (its note says so)
	p.open("r2", true)
	p.open("r3", true)
	v1 := p.openWith("r1", func(f *regions.File) { f.Regions[2].Table = "no such table!" })
	settle(t, v1)
	unknown, _ := p.newPublic()
	if _, err := resolve(v1, unknown); !errors.Is(err, mapping.ErrUnavailable) && !errors.Is(err, mapping.ErrNotFound) {
		t.Errorf("unknown public id, r3 refusing: %v, want unavailable (as r3 down) or not found", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := v1.Publish(ctx, p.id("r3"), p.newPublic); err != nil {
		t.Errorf("publish of a new r3 id, r3 refusing: %v, want it published as when r3 is down", err)
	}
}

// TestLookupOfANewIDWhileThePeerIsDown: the gateway looks every ID of a response up and publishes
// those that have no public ID; any other answer of the lookup fails the response (publish.go).
// With r1's peer r2 down, a new r1 ID is published (r3 stands in), so its lookup must let the
// gateway go on to that publish rather than fail every response that holds a new ID of r1 or r2.
func TestLookupOfANewIDWhileThePeerIsDown(t *testing.T) {
	p := newPlatform(t)
	v1 := p.open("r1", true)
	p.open("r2", true)
	p.open("r3", true)
	settle(t, v1)
	v1.links["r2"].cut()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id := p.id("r1")
	_, lerr := v1.Lookup(ctx, id)
	if _, err := v1.Publish(ctx, id, p.newPublic); err != nil {
		t.Fatalf("publish of a new r1 id, r2 cut: %v", err)
	}
	if !errors.Is(lerr, mapping.ErrNotFound) {
		t.Errorf("the gateway's lookup of a new r1 id, r2 cut: %v (the response fails), though its publish is acknowledged", lerr)
	}
}

// TestTwoProcessesFillOneRegion: every internal API process of a region that comes back empty
// runs the fill at start-up, so several run at once from the same note. Once one of them has
// marked the region filled, the region stays filled: another's progress must not write "not
// filled" over it (the region would go back to refusing customers and publishes).
func TestTwoProcessesFillOneRegion(t *testing.T) {
	p := newPlatform(t)
	v1 := p.open("r1", true)
	p.open("r2", true)
	for range 400 {
		publish(t, v1, p, p.id("r1"))
	}
	p.srv["r1"] = restartEmpty(t, p.srv["r1"])
	p.createTable("r1")
	a, b := p.open("r1", false), p.open("r1", false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan string, 2)
	go func() { a.Fill(ctx, 50*time.Millisecond); done <- "a" }()
	go func() {
		time.Sleep(300 * time.Millisecond) // started a little later: behind a
		b.Fill(ctx, 50*time.Millisecond)
		done <- "b"
	}()
	<-done
	own := p.replica("r1")
	flips := 0
	for second := false; !second; {
		select {
		case <-done:
			second = true
		default:
		}
		raw, err := own.Note(ctx, regions.FillNote)
		if err == nil && !strings.Contains(string(raw), `"done":true`) {
			flips++
		}
		time.Sleep(5 * time.Millisecond)
	}
	if flips > 0 {
		t.Errorf("after one fill marked r1 filled, its note said not filled %d times while the other fill went on", flips)
	}
}

// TestPublishWhileTheOwnerIsFrozen: r1's table frozen (no answer, no refusal), a publish of new r1
// IDs from r2 goes on, and does not ask the frozen owner to choose once its lookup failed: one
// call timeout per publish, not two.
func TestPublishWhileTheOwnerIsFrozen(t *testing.T) {
	p := newPlatform(t)
	p.callTimeout = frozenCallTimeout
	p.open("r1", true)
	v2 := p.open("r2", true)
	p.open("r3", true)
	settle(t, v2)
	p.srv["r1"].Freeze()
	defer p.srv["r1"].Thaw()
	for i := range 3 {
		before := testenv.Gather(t, v2.reg).Sum("idgen_publicid_region_calls_total", testenv.Labels{"store_region": "r1", "op": "publish"})
		publish(t, v2, p, p.id("r1"))
		if n := testenv.Gather(t, v2.reg).Sum("idgen_publicid_region_calls_total", testenv.Labels{"store_region": "r1", "op": "publish"}) - before; n != 0 {
			t.Errorf("publish %d of a new r1 id, r1 frozen: r1 asked to choose %v times after its lookup failed", i, n)
		}
	}
}

// TestAbsentRegion: a region of the topology whose table does not exist yet (absent in the file,
// its server not even running) is never asked: the others fill, publish with two copies, and
// answer an unknown ID not found.
func TestAbsentRegion(t *testing.T) {
	p := newPlatform(t)
	p.srv["r3"].Kill()
	absent := func(f *regions.File) {
		for i := range f.Regions {
			f.Regions[i].Absent = f.Regions[i].Name == "r3"
		}
	}
	var views []*view
	for _, n := range []string{"r1", "r2"} {
		v := p.openWith(n, absent)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, err := v.Fill(ctx, 50*time.Millisecond); err != nil {
			t.Fatalf("%s's fill with r3 absent: %v", n, err)
		}
		cancel()
		views = append(views, v)
	}
	settle(t, views...)
	id := p.id("r3") // r3's number: owned by the lowest present region
	pub := publish(t, views[1], p, id)
	for _, v := range views {
		if got, err := resolve(v, pub); err != nil || got != id {
			t.Fatalf("%s: %d, %v", v.Local(), got, err)
		}
	}
	unknown, _ := p.newPublic()
	if _, err := resolve(views[0], unknown); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("unknown with r3 absent: %v, want not found", err)
	}
	if n := testenv.Gather(t, views[0].reg).Sum("idgen_publicid_region_calls_total", testenv.Labels{"store_region": "r3"}); n != 0 {
		t.Errorf("r3, absent, was asked %v times", n)
	}
	f := p.file("r3", func(n string) string { return p.srv[n].Endpoint })
	absent(&f)
	if err := f.Check(); err == nil {
		t.Error("a file whose own region is absent passes its check")
	}
}
