// Package regions is the cross-region mapping store: every region's store of record (a
// mapping.Replica, DynamoDB in production) held by every process, so that a public ID published
// in any region resolves in every region at once, and losing a region loses no mapping.
//
// Where a mapping lives. Each internal ID has an owner region: the region whose number a v2 ID
// carries, or, for an ID without a region (v1) or with a number no region has, the region of the
// lowest number. A mapping is written to the owner's store and to the owner's failover peer's
// (the topology's pairs) before the publish is acknowledged; when one of them does not answer,
// the next region of the file takes its place, so an acknowledged mapping is in two regions'
// stores (File.Copies, 1 only when an operator says so).
//
// Who decides. The owner's store is the one place a new public ID is chosen (its conditional
// write: the first writer wins), so concurrent publishes of one internal ID, in any regions,
// agree. Before choosing, a publish asks the owner and its peer (at once) whether the ID has a
// public ID already, so a mapping chosen while the owner was unreachable is found and copied back
// to the owner rather than chosen again. Only when the owner cannot be reached does the next
// region of the order choose; if the owner is alive for others meanwhile (a partition), both
// choices stand: two public IDs for one internal ID, each resolving to it forever.
//
// Reading. A resolve asks the local region's store first and, on a miss, a failure or no answer
// within HedgeAfter, every other region's at once (at most MaxFanOuts such fan-outs in flight);
// the first that has the public ID answers. It is unknown (ErrNotFound) only when every region
// answered with a filled store: otherwise it is ErrUnavailable, never a 404 for a real ID (a
// mapping may be held by the region that did not answer alone, one that stood in for a region
// lost since). A copy made in a region that stood in for the owner or its peer is owed to that
// region and copied there once it answers (repair.go), while the process runs. Unknown public IDs are kept
// in a negative cache for NegativeTTL; public IDs are 128 random bits that nobody holds before
// their publish is acknowledged, by which time both copies are written, so the cache cannot hide a
// real one (a publish through this process also clears its entry).
//
// A region that comes back empty. A region's store holds a note, "fill", that says it holds every
// mapping it should: Fill (run by the internal API's processes) copies, from every other region,
// each mapping whose owner or owner's peer is the region, reads each back, records its progress in
// a note of its own, "fill-progress", after every page (a stopped fill goes on where it stopped),
// and marks the region filled; the internal API's processes then watch the note and fill the
// region again if its store is made again empty while they run. Until then the region's store neither chooses public IDs nor counts as having answered
// a miss, for its own processes and for every other region's, and its own processes acknowledge
// no publish (ErrFilling) and report not ready.
//
// Tokens and secrets are regional: the local region's store only.
package regions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/prometheus/client_golang/prometheus"
)

// ErrFilling is mapping.ErrFilling: the local region is being filled.
var ErrFilling = mapping.ErrFilling

// FillNote is the name of the note that says a region is filled; FillProgressNote holds a fill's
// progress until then. They are apart so that a fill still under way in another process can
// never write over the note that ends it.
const (
	FillNote         = "fill"
	FillProgressNote = "fill-progress"
)

// Options tunes a Store; zero values take the defaults in the comments.
type Options struct {
	// CallTimeout bounds every call to one region's store. Default 1s.
	CallTimeout time.Duration
	// HedgeAfter is how long a resolve waits for the local store before asking the others too.
	// Default 50ms.
	HedgeAfter time.Duration
	// MaxFanOuts bounds the fan-outs (a local miss asked of every other region) in flight; one
	// past it is ErrUnavailable. Default 256.
	MaxFanOuts int
	// NegativeTTL is how long an unknown public ID is remembered as unknown; NegativeMax bounds
	// the entries. Defaults 10s and 100,000.
	NegativeTTL time.Duration
	NegativeMax int
	// SuspectFor is how long a region whose store failed a call is asked after the others.
	// Default 5s.
	SuspectFor time.Duration
	// NoteEvery is how often the other regions' fill notes are read again. Default 10s.
	NoteEvery time.Duration
	// FillPage is the page size of a fill's scans. Default 500.
	FillPage int
	// RepairEvery is how often the copies owed to a region that did not answer at a publish are
	// tried again; RepairMax bounds them (one more is dropped, and counted). Defaults 5s and
	// 100,000.
	RepairEvery time.Duration
	RepairMax   int
	Registerer  prometheus.Registerer
	Logger      *slog.Logger
	now         func() time.Time
}

func (o *Options) defaults() {
	if o.CallTimeout <= 0 {
		o.CallTimeout = time.Second
	}
	if o.HedgeAfter <= 0 {
		o.HedgeAfter = 50 * time.Millisecond
	}
	if o.MaxFanOuts <= 0 {
		o.MaxFanOuts = 256
	}
	if o.NegativeTTL <= 0 {
		o.NegativeTTL = 10 * time.Second
	}
	if o.NegativeMax <= 0 {
		o.NegativeMax = 100_000
	}
	if o.SuspectFor <= 0 {
		o.SuspectFor = 5 * time.Second
	}
	if o.NoteEvery <= 0 {
		o.NoteEvery = 10 * time.Second
	}
	if o.FillPage <= 0 {
		o.FillPage = 500
	}
	if o.RepairEvery <= 0 {
		o.RepairEvery = 5 * time.Second
	}
	if o.RepairMax <= 0 {
		o.RepairMax = 100_000
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.now == nil {
		o.now = time.Now
	}
}

// region is one region's store and what the Store knows of it.
type region struct {
	name    string
	number  int
	peer    string
	rep     mapping.Replica
	failed  atomic.Int64 // Unix ns of its last failed call
	filled  atomic.Bool
	notedAt atomic.Int64 // Unix ns of its fill note's last reading
	reading atomic.Bool  // a reading of the note is under way
}

// Store is the cross-region store. It implements mapping.Store and mapping.Durability.
type Store struct {
	o        Options
	file     File
	sched    idcore.Schedule
	local    *region
	all      []*region // the file's order
	byName   map[string]*region
	byNumber map[int]*region
	lowest   *region
	fanouts  chan struct{}
	neg      negCache
	m        metrics
	repairMu sync.Mutex
	repairs  []repair
	stop     context.CancelFunc
}

// New returns the store of the regions of f, one Replica per region name (each its own store of
// record), with this process in f.Region. It reads the local region's fill note.
func New(ctx context.Context, f File, stores map[string]mapping.Replica, o Options) (*Store, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	o.defaults()
	sched, _ := idcore.ScheduleByName(f.schedule())
	s := &Store{o: o, file: f, sched: sched, byName: map[string]*region{}, byNumber: map[int]*region{},
		fanouts: make(chan struct{}, o.MaxFanOuts)}
	s.neg = negCache{ttl: o.NegativeTTL, max: o.NegativeMax, m: map[string]time.Time{}, now: o.now}
	for _, fr := range f.Regions {
		if fr.Absent {
			continue // its table does not exist yet: not a region of this store until it does
		}
		rep := stores[fr.Name]
		if rep == nil {
			return nil, fmt.Errorf("regions: no store for region %s", fr.Name)
		}
		r := &region{name: fr.Name, number: fr.Number, peer: fr.Peer, rep: rep}
		s.all = append(s.all, r)
		s.byName[r.name] = r
		s.byNumber[r.number] = r
		if s.lowest == nil || r.number < s.lowest.number {
			s.lowest = r
		}
	}
	s.local = s.byName[f.Region]
	var wg sync.WaitGroup
	s.m = newMetrics(o.Registerer, s)
	for _, r := range s.all { // the first readings, at once; a region that does not answer counts as not filled
		wg.Go(func() { _, _ = s.readNote(ctx, r) })
	}
	wg.Wait()
	var loop context.Context
	loop, s.stop = context.WithCancel(context.Background())
	go s.repairLoop(loop)
	return s, nil
}

// Local is the name of the region this process runs in.
func (s *Store) Local() string { return s.local.name }

// Copies is how many regions hold an acknowledged mapping.
func (s *Store) Copies() int { return s.file.copies() }

// Filled reports whether the local region's store holds every mapping it should (its fill is
// done), as its note said at the last reading (taken again in the background every NoteEvery).
func (s *Store) Filled(ctx context.Context) bool { return s.isFilled(ctx, s.local) }

// Probe is what a health check asks of the store: ErrFilling while the local region is being
// filled, else the local region's store's answer to a lookup (nil when it answers).
func (s *Store) Probe(ctx context.Context) error {
	if !s.Filled(ctx) {
		return ErrFilling
	}
	_, err := call(s, ctx, s.local, "lookup", func(ctx context.Context, rep mapping.Replica) (string, error) { return rep.Lookup(ctx, 0) })
	if errors.Is(err, mapping.ErrNotFound) {
		return nil
	}
	return err
}

// Owner returns the owner region of an internal ID's mapping.
func (s *Store) Owner(internal int64) string { return s.owner(internal).name }

func (s *Store) owner(internal int64) *region {
	if d, err := s.sched.Decode(idcore.ID(internal)); err == nil && d.HasRegion {
		if r := s.byNumber[d.Region]; r != nil {
			return r
		}
	}
	return s.lowest
}

// placement is where a mapping of internal belongs: its owner, the owner's peer, then the other
// regions in the file's order.
func (s *Store) placement(internal int64) []*region {
	own := s.owner(internal)
	out := []*region{own}
	if p := s.byName[own.peer]; p != nil && p != own {
		out = append(out, p)
	}
	for _, r := range s.all {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// home reports whether r is the owner of internal's mapping or the owner's peer: the regions a
// fill copies it into, whatever Copies is now (a region filled while an operator has lowered it
// to 1 still takes the mappings it is the peer of).
func (s *Store) home(internal int64, r *region) bool {
	p := s.placement(internal)
	return slices.Contains(p[:min(2, len(p))], r)
}

// call runs f on r's store within CallTimeout and records a failure of the store.
func call[T any](s *Store, ctx context.Context, r *region, op string, f func(context.Context, mapping.Replica) (T, error)) (T, error) {
	cctx, cancel := context.WithTimeout(ctx, s.o.CallTimeout)
	defer cancel()
	v, err := f(cctx, r.rep)
	if err != nil && ctx.Err() != nil {
		// The caller gave up (another region answered first, or its own deadline): that says
		// nothing of this region.
		s.m.calls.WithLabelValues(r.name, op, "canceled").Inc()
		return v, fmt.Errorf("%w: %s: %w", mapping.ErrUnavailable, r.name, ctx.Err())
	}
	if cctx.Err() != nil && err != nil && !errors.Is(err, mapping.ErrUnavailable) {
		err = fmt.Errorf("%w: %s: %w", mapping.ErrUnavailable, r.name, err)
	}
	result := "ok"
	switch {
	case errors.Is(err, mapping.ErrNotFound):
		result = "not_found"
	case errors.Is(err, mapping.ErrUnavailable):
		result = "unavailable"
		r.failed.Store(s.o.now().UnixNano())
	case err != nil:
		result = "error"
	}
	s.m.calls.WithLabelValues(r.name, op, result).Inc()
	return v, err
}

// suspect reports whether r's store failed a call within SuspectFor.
func (s *Store) suspect(r *region) bool {
	f := r.failed.Load()
	return f != 0 && s.o.now().Sub(time.Unix(0, f)) < s.o.SuspectFor
}

// byHealth returns regions with the suspect ones last, each group in its given order.
func (s *Store) byHealth(regions []*region) []*region {
	out := make([]*region, 0, len(regions))
	var later []*region
	for _, r := range regions {
		if s.suspect(r) {
			later = append(later, r)
		} else {
			out = append(out, r)
		}
	}
	return append(out, later...)
}

// fillNote is what a region's fill note holds.
type fillNote struct {
	Done bool `json:"done"`
	// Source is the index, in the file's order, of the region being copied from, and Cursor the
	// next page of its scan.
	Source   int    `json:"source"`
	Cursor   string `json:"cursor,omitempty"`
	Copied   int64  `json:"copied"`
	Verified int64  `json:"verified"`
	Differ   int64  `json:"differ"`
}

// isFilled reports r's fill as its note said at the last reading; a reading older than
// NoteEvery (a second, for a region not filled at the last one) is taken again in the background
// (a region's table made again, empty, is seen as not filled within NoteEvery), so a request
// never waits for it.
func (s *Store) isFilled(ctx context.Context, r *region) bool {
	every := s.o.NoteEvery
	if !r.filled.Load() {
		every = min(every, time.Second) // a region being filled is expected to be done soon
	}
	if time.Duration(s.o.now().UnixNano()-r.notedAt.Load()) >= every && r.reading.CompareAndSwap(false, true) {
		go func() {
			defer r.reading.Store(false)
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.CallTimeout)
			defer cancel()
			_, _ = s.readNote(ctx, r)
		}()
	}
	return r.filled.Load()
}

// readNote reads r's fill note and records what it says; a note that cannot be read leaves the
// last reading as it was.
func (s *Store) readNote(ctx context.Context, r *region) (bool, error) {
	n, err := s.note(ctx, r)
	if err != nil {
		return r.filled.Load(), err
	}
	r.filled.Store(n.Done)
	r.notedAt.Store(s.o.now().UnixNano())
	return n.Done, nil
}

func (s *Store) note(ctx context.Context, r *region) (fillNote, error) {
	return s.noteNamed(ctx, r, FillNote)
}

func (s *Store) noteNamed(ctx context.Context, r *region, name string) (fillNote, error) {
	b, err := call(s, ctx, r, "note", func(ctx context.Context, rep mapping.Replica) ([]byte, error) { return rep.Note(ctx, name) })
	var n fillNote
	switch {
	case errors.Is(err, mapping.ErrNotFound):
		return n, nil
	case err != nil:
		return n, err
	}
	if err := json.Unmarshal(b, &n); err != nil {
		return n, fmt.Errorf("regions: %s's fill note: %w", r.name, err)
	}
	return n, nil
}

// Volatile: a region's store of record is durable when its publish returns (DynamoDB), and a
// publish is acknowledged only once Copies regions hold it.
func (s *Store) Volatile() (bool, string) {
	if d, ok := s.local.rep.(mapping.Durability); ok {
		return d.Volatile()
	}
	return true, "the local region's store does not report its durability"
}

// ReadsDurable: every answer comes from a region's store of record.
func (s *Store) ReadsDurable() bool {
	d, ok := s.local.rep.(mapping.Durability)
	return ok && d.ReadsDurable()
}

// Close closes every region's store.
func (s *Store) Close() error {
	s.stop()
	var errs []error
	for _, r := range s.all {
		errs = append(errs, r.rep.Close())
	}
	return errors.Join(errs...)
}

// PutToken, GetToken and Secret are the local region's.
func (s *Store) PutToken(ctx context.Context, handle string, value []byte, ttl time.Duration) error {
	_, err := call(s, ctx, s.local, "put_token", func(ctx context.Context, rep mapping.Replica) (struct{}, error) {
		return struct{}{}, rep.PutToken(ctx, handle, value, ttl)
	})
	return err
}

func (s *Store) GetToken(ctx context.Context, handle string) ([]byte, error) {
	return call(s, ctx, s.local, "get_token", func(ctx context.Context, rep mapping.Replica) ([]byte, error) { return rep.GetToken(ctx, handle) })
}

func (s *Store) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	return call(s, ctx, s.local, "secret", func(ctx context.Context, rep mapping.Replica) ([]byte, error) { return rep.Secret(ctx, name, size) })
}
