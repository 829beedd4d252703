// Package cached keeps the mappings a store has resolved in a bounded in-process cache
// (github.com/maypok86/otter/v2, bounded in bytes), in front of any mapping.Store.
//
// A mapping never changes once written, so an entry never goes stale: what the cache holds is
// what the store would answer. It holds only what is durable:
//
//   - an answer of Resolve or Lookup is cached only when Options.Durable says, both before and
//     after the call, that whatever the store answers is durable (a Redis store with AOF on and
//     appendfsync always on every node that takes writes, and no replicas to wait for: there
//     Redis answers a read only after fsyncing the writes before it);
//   - a public ID Publish returned without error is cached under the same condition, and a
//     Publish of an internal ID whose public ID is cached answers it without asking the store;
//   - a miss (mapping.ErrNotFound), an error, and a public ID that did not resolve are never
//     cached: the next call asks the store again, so a mapping published meanwhile is found.
//
// Tokens (PutToken, GetToken) are never cached: each goes to the store, which expires them, so a
// token is found by every instance at once and gone from all of them at its expiry; a customer
// reads each page once, so a cache would rarely answer one anyway.
//
// Lookup of internal ID 0 always goes to the store: the gateway's health check reads it to learn
// whether the store answers.
//
// Each entry weighs the bytes of its strings plus a fixed overhead per entry (entryOverhead), and
// the cache keeps the total under Options.MaxBytes, evicting by frequency and recency (W-TinyLFU).
// Its hits and misses are exported (Options.Registerer): idgen_publicid_cache_requests_total by op
// and result, idgen_publicid_cache_hit_ratio and idgen_publicid_cache_bytes.
package cached

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/maypok86/otter/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// entryOverhead is what an entry costs besides its strings' bytes: the key and value structs, the
// cache's node and its hash table slot, estimated from otter's node layout (rounded up).
const entryOverhead = 128

// key is one direction of a mapping: a public ID (byPublic, internal unset), or an internal ID
// (public ""). The direction is a field of its own, so public ID "" and internal ID 0 are
// different keys.
type key struct {
	byPublic bool
	public   string
	internal int64
}

// Options for New.
type Options struct {
	// MaxBytes bounds the cache's entries, each weighing its strings plus entryOverhead bytes.
	// It must be positive.
	MaxBytes uint64
	// Durable reports whether whatever the inner store answers now is durable (redismap's
	// Store.ReadsDurable). Nil: always (SQLite with synchronous=FULL answers only committed,
	// fsynced transactions).
	Durable func() bool
	// Registerer receives the cache's metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Store is a mapping.Store that answers from its cache what it can and asks the inner store the
// rest.
type Store struct {
	inner   mapping.Store
	c       *otter.Cache[key, key]
	durable func() bool
	held    atomic.Bool      // the cache may hold entries: set by keep, cleared by the purge in settled
	hits    [3]atomic.Uint64 // by op: opResolve, opLookup, opPublish
	misses  [3]atomic.Uint64
	reqs    *prometheus.CounterVec
	counted [3][2]prometheus.Counter // by op, then hit (0) or miss (1)
}

const (
	opResolve = iota
	opLookup
	opPublish
)

var _ mapping.Store = (*Store)(nil)

// New returns a cache of at most o.MaxBytes in front of inner.
func New(inner mapping.Store, o Options) (*Store, error) {
	if o.MaxBytes == 0 {
		return nil, errors.New("cached: MaxBytes must be positive")
	}
	c, err := otter.New(&otter.Options[key, key]{
		MaximumWeight: o.MaxBytes,
		Weigher: func(k, v key) uint32 {
			return uint32(entryOverhead + len(k.public) + len(v.public))
		},
	})
	if err != nil {
		return nil, err
	}
	s := &Store{inner: inner, c: c, durable: o.Durable}
	if s.durable == nil {
		s.durable = func() bool { return true }
	}
	s.reqs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_publicid_cache_requests_total",
		Help: "Calls of the cache of resolved mappings, by op (resolve, lookup, publish) and result (hit: answered from the cache; miss: asked of the store)."},
		[]string{"op", "result"})
	for op, name := range []string{"resolve", "lookup", "publish"} {
		s.counted[op][0] = s.reqs.WithLabelValues(name, "hit")
		s.counted[op][1] = s.reqs.WithLabelValues(name, "miss")
	}
	if o.Registerer != nil {
		ratio := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "idgen_publicid_cache_hit_ratio",
			Help: "Share of the resolves and lookups since start that the cache of resolved mappings answered (hits over hits and misses; publishes not counted; 0 before any)."},
			s.HitRatio)
		size := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "idgen_publicid_cache_bytes",
			Help: "Bytes the cache of resolved mappings holds (each entry's strings plus a fixed overhead), at most --mapping-cache-bytes."},
			func() float64 { return float64(c.WeightedSize()) })
		for _, m := range []prometheus.Collector{s.reqs, ratio, size} {
			if err := o.Registerer.Register(m); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

func (s *Store) count(op int, hit bool) {
	if hit {
		s.hits[op].Add(1)
		s.counted[op][0].Inc()
		return
	}
	s.misses[op].Add(1)
	s.counted[op][1].Inc()
}

// HitRatio returns the share of resolves and lookups (not publishes) since New that the cache
// answered.
func (s *Store) HitRatio() float64 {
	var h, m uint64
	for _, op := range []int{opResolve, opLookup} {
		h += s.hits[op].Load()
		m += s.misses[op].Load()
	}
	if h+m == 0 {
		return 0
	}
	return float64(h) / float64(h+m)
}

// Bytes returns what the cache's entries weigh now.
func (s *Store) Bytes() uint64 { return s.c.WeightedSize() }

// keep caches both directions of a mapping. The public ID is copied: a caller's string may share
// memory with much more (the gateway's public IDs are cut from the request line, up to 64 KiB),
// which the entry's weight would not count.
func (s *Store) keep(public string, internal int64) {
	public = strings.Clone(public)
	s.c.Set(key{byPublic: true, public: public}, key{internal: internal})
	s.c.Set(key{internal: internal}, key{public: public})
	s.held.Store(true) // after the Sets: a purge that saw false ran before them, the next one runs after
}

// settled reports whether the inner store answers durably now. When it does not, whatever the
// cache holds is dropped: a store found volatile (AOF turned off, say) may have answered writes
// that were never fsynced since the reading before, and a crash would lose them while the cache
// kept answering them.
func (s *Store) settled() bool {
	if s.durable() {
		return true
	}
	if s.held.Swap(false) {
		s.c.InvalidateAll()
	}
	return false
}

// Resolve implements mapping.Store.
func (s *Store) Resolve(ctx context.Context, public string) (int64, error) {
	durable := s.settled()
	if v, ok := s.c.GetIfPresent(key{byPublic: true, public: public}); ok && durable {
		s.count(opResolve, true)
		return v.internal, nil
	}
	s.count(opResolve, false)
	internal, err := s.inner.Resolve(ctx, public)
	if err == nil && durable && s.durable() {
		s.keep(public, internal)
	}
	return internal, err
}

// Lookup implements mapping.Store.
func (s *Store) Lookup(ctx context.Context, internal int64) (string, error) {
	if internal == 0 {
		return s.inner.Lookup(ctx, internal)
	}
	durable := s.settled()
	if v, ok := s.c.GetIfPresent(key{internal: internal}); ok && durable {
		s.count(opLookup, true)
		return v.public, nil
	}
	s.count(opLookup, false)
	public, err := s.inner.Lookup(ctx, internal)
	if err == nil && durable && s.durable() {
		s.keep(public, internal)
	}
	return public, err
}

// Publish implements mapping.Store: an internal ID whose public ID is cached gets it (the one it
// already has, as the contract wants); else the inner store's Publish (which makes a mapping or
// finds one, and refuses a new one on a volatile store), whose answer is then cached.
func (s *Store) Publish(ctx context.Context, internal int64, newPublic func() (string, error)) (string, error) {
	durable := s.settled()
	if v, ok := s.c.GetIfPresent(key{internal: internal}); ok && durable {
		s.count(opPublish, true)
		return v.public, nil
	}
	s.count(opPublish, false)
	public, err := s.inner.Publish(ctx, internal, newPublic)
	if err == nil && durable && s.durable() {
		s.keep(public, internal)
	}
	return public, err
}

// PutToken implements mapping.Store: the inner store's, never cached.
func (s *Store) PutToken(ctx context.Context, handle string, value []byte, ttl time.Duration) error {
	return s.inner.PutToken(ctx, handle, value, ttl)
}

// GetToken implements mapping.Store: the inner store's, never cached.
func (s *Store) GetToken(ctx context.Context, handle string) ([]byte, error) {
	return s.inner.GetToken(ctx, handle)
}

// Secret implements mapping.Store: the inner store's, never cached (its caller keeps it).
func (s *Store) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	return s.inner.Secret(ctx, name, size)
}

// Close implements mapping.Store: it closes the inner store.
func (s *Store) Close() error {
	s.c.StopAllGoroutines()
	return s.inner.Close()
}
