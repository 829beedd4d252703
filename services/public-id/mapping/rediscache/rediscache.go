// Package rediscache keeps the mappings a store has resolved in a regional Redis that every
// process of the region shares (github.com/redis/go-redis/v9), in front of any mapping.Store: the
// store of record is asked only for what no process of the region has asked it for lately.
//
// A mapping never changes once written, so a cached mapping never goes stale. The cache holds
// each direction under a key of its own prefix, apart from the mapping store's pid:* and tok:*
// keys when one Redis serves both:
//
//	c:p:<public>   → "<internal>/<crc>"
//	c:i:<internal> → "<public>/<crc>"
//
// each written with SET … EX (Options.TTL, 24 h by default) and read with GET. <crc> is eight
// hex digits of the CRC-32C of the key and the value before it: a value that does not end in the
// checksum of its key (written by hand, by another program, cut short) is a miss, counted as
// corrupt, never an answer, and the store's answer overwrites it.
//
//   - Resolve and Lookup GET the cache first; a miss (or anything Redis does not answer in time)
//     asks the store below, and a mapping it finds is written back, both directions, in the
//     background. A miss of the store (mapping.ErrNotFound) and its errors are never cached, so a
//     mapping published meanwhile is found at once.
//   - Publish goes to the store below, then writes both directions in the background.
//   - Tokens and secrets go to the store below, untouched.
//   - Lookup of internal ID 0 goes to the store below alone: the gateway's health check reads it
//     to learn whether the store answers.
//
// The cache never makes a call slower or less available than the store alone, beyond its own
// bound: every Redis call ends within Options.Timeout (tens of milliseconds), and a Redis error,
// timeout or frozen server means "ask the store". After a read fails, Redis is not asked at all
// for Options.Pause (1 s), so a Redis that is down or frozen costs one timeout a second rather
// than one a call. Write-backs never hold a caller: they run on goroutines of their own, at
// most MaxWrites at once (past that, and while Redis is paused, a write is dropped), and a write
// that fails is dropped. go-redis retries nothing here.
//
// Durability: the cache holds only what the store below answered durably. It reads and writes
// the cache only while the store's reads are durable (mapping.Durability's ReadsDurable, both
// before and after the call that found a mapping), and it forwards Volatile and ReadsDurable to
// the store below, so it never makes a volatile store look durable. A store that does not report
// its durability counts as not durable: every call then goes to it.
//
// Redis must bound the cache's memory itself: maxmemory set, and maxmemory-policy allkeys-lru
// or allkeys-lfu on a Redis of its own, volatile-lru or volatile-lfu on a Redis the mapping
// store shares (its mappings have no TTL, so volatile-* never evicts one; allkeys-* would). Open
// reads CONFIG GET maxmemory* where the ACL allows it and logs a warning for any other setting.
//
// Metrics (Options.Registerer): idgen_publicid_redis_cache_requests_total by op (resolve,
// lookup) and result (hit; miss; corrupt: a value that does not parse; error: Redis failed or
// did not answer in time; skipped: Redis not asked, paused after an error or the store's reads
// not durable), and idgen_publicid_redis_cache_writes_total by result (written, failed,
// dropped).
package rediscache

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Defaults of Options.
const (
	DefaultTimeout = 50 * time.Millisecond
	DefaultTTL     = 24 * time.Hour
	DefaultPause   = time.Second
)

// MaxWrites bounds the write-backs running at once; past it a write is dropped.
const MaxWrites = 256

// ACL is the Redis ACL a user of the cache needs, and all it needs (ACL SETUSER NAME on
// >PASSWORD followed by these rules): the cache's keys, GET and SET, and what go-redis sends on
// connecting. Add +config|get to let Open check the eviction policy; without it Open logs that
// it could not. CONFIG GET cannot be narrowed to one parameter, so it lets its user read every
// setting (see redismap.ACLConfigRead). On Redis 7.2 and later add ACL72.
const ACL = "resetkeys ~c:* resetchannels -@all +get +set +ping +hello +client|setname"

// ACL72 is the rule ACL needs beside it on Redis 7.2 and later (the client name go-redis sets).
const ACL72 = "+client|setinfo"

// Options for New.
type Options struct {
	// Timeout bounds every Redis call (a GET, a write-back). Default DefaultTimeout.
	Timeout time.Duration
	// TTL is the life of a cached mapping in Redis (whole seconds, at least one). Mappings never
	// change: it only bounds the memory of mappings nobody asks for. Default DefaultTTL.
	TTL time.Duration
	// Pause is how long Redis is not asked after a read failed or timed out. Default DefaultPause.
	Pause time.Duration
	// Durability is what the store below says of its persistence (the driver's, when decorators
	// that do not forward it, such as mapping/deadline, stand between). Nil: inner's, when it
	// implements mapping.Durability; else the store counts as not durable and nothing is cached.
	Durability mapping.Durability
	// Registerer receives the cache's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger receives what Open finds of the Redis's settings. Default: discard.
	Logger *slog.Logger
}

// Store is a mapping.Store that answers from the regional Redis what it can and asks the store
// below the rest.
type Store struct {
	inner   mapping.Store
	rdb     redis.UniversalClient
	dur     mapping.Durability
	timeout time.Duration
	ttl     time.Duration
	pause   time.Duration
	log     *slog.Logger

	pausedUntil atomic.Int64  // Unix nanoseconds: Redis is not asked before
	slots       chan struct{} // a write-back's, while it runs

	mu     sync.Mutex // guards closed and bg.Add against Close's bg.Wait
	closed bool
	bg     sync.WaitGroup

	reads  [2][numResults]prometheus.Counter // by op, then result
	writes [3]prometheus.Counter             // written, failed, dropped
}

var (
	_ mapping.Store      = (*Store)(nil)
	_ mapping.Durability = (*Store)(nil)
)

const (
	opResolve = iota
	opLookup
)

const (
	hit = iota
	miss
	corrupt
	failed
	skipped
	numResults
)

const (
	written = iota
	writeFailed
	dropped
)

// New returns a cache on rdb (a go-redis client, best with ContextTimeoutEnabled so that a call's
// deadline bounds its socket reads, and no retries: Open's client) in front of inner. Close closes
// both.
func New(inner mapping.Store, rdb redis.UniversalClient, o Options) (*Store, error) {
	s := &Store{inner: inner, rdb: rdb, dur: o.Durability, timeout: o.Timeout, ttl: o.TTL, pause: o.Pause,
		log: o.Logger, slots: make(chan struct{}, MaxWrites)}
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	if s.ttl == 0 {
		s.ttl = DefaultTTL
	}
	if s.pause == 0 {
		s.pause = DefaultPause
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.dur == nil {
		s.dur, _ = inner.(mapping.Durability)
	}
	switch {
	case s.timeout < 0:
		return nil, fmt.Errorf("rediscache: timeout %v: want a positive duration", s.timeout)
	case s.ttl < time.Second || s.ttl%time.Second != 0:
		return nil, fmt.Errorf("rediscache: ttl %v: want whole seconds, at least one", s.ttl)
	case s.pause < 0:
		return nil, fmt.Errorf("rediscache: pause %v: want a positive duration", s.pause)
	}
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_publicid_redis_cache_requests_total",
		Help: "Reads of the regional Redis cache of resolved mappings, by op (resolve, lookup) and result (hit: answered from Redis; " +
			"miss: asked of the store; corrupt: a cached value that does not parse, asked of the store; error: Redis failed or did not " +
			"answer within --cache-redis-timeout, asked of the store; skipped: Redis not asked, paused after an error or the store's reads not durable)."},
		[]string{"op", "result"})
	for op, name := range []string{"resolve", "lookup"} {
		for r, result := range []string{"hit", "miss", "corrupt", "error", "skipped"} {
			s.reads[op][r] = reqs.WithLabelValues(name, result)
		}
	}
	wr := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_publicid_redis_cache_writes_total",
		Help: "Write-backs of found mappings to the regional Redis cache, by result (written; failed: Redis refused or did not answer " +
			"within --cache-redis-timeout; dropped: not sent, Redis paused after an error or too many writes in flight)."},
		[]string{"result"})
	for r, result := range []string{"written", "failed", "dropped"} {
		s.writes[r] = wr.WithLabelValues(result)
	}
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{reqs, wr} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

func pKey(public string) string  { return "c:p:" + public }
func iKey(internal int64) string { return "c:i:" + strconv.FormatInt(internal, 10) }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sums are the buffers sum hashes in (crc32 takes bytes, and a string's bytes passed to it would
// be copied to the heap on every call).
var sums = sync.Pool{New: func() any { b := make([]byte, 0, 128); return &b }}

// sum is the checksum of a cached value: CRC-32C of its key, a zero byte and the value.
func sum(key, payload string) uint32 {
	bp := sums.Get().(*[]byte)
	b := append(append(append((*bp)[:0], key...), 0), payload...)
	c := crc32.Checksum(b, castagnoli)
	*bp = b
	sums.Put(bp)
	return c
}

// seal returns payload as cached under key: payload, "/", its checksum in 8 hex digits.
func seal(key, payload string) string {
	c := sum(key, payload)
	b := make([]byte, 0, len(payload)+9)
	b = append(b, payload...)
	b = append(b, '/')
	b = hex.AppendEncode(b, []byte{byte(c >> 24), byte(c >> 16), byte(c >> 8), byte(c)})
	return string(b)
}

// unseal returns the payload of a value cached under key, or false when it does not end in the
// checksum of key and payload.
func unseal(key, value string) (string, bool) {
	n := len(value) - 9
	if n < 0 || value[n] != '/' {
		return "", false
	}
	var c [4]byte
	if _, err := hex.Decode(c[:], []byte(value[n+1:])); err != nil {
		return "", false
	}
	payload := value[:n]
	if sum(key, payload) != uint32(c[0])<<24|uint32(c[1])<<16|uint32(c[2])<<8|uint32(c[3]) {
		return "", false
	}
	return payload, true
}

// durable reports whether the store below answers durably now.
func (s *Store) durable() bool { return s.dur != nil && s.dur.ReadsDurable() }

func (s *Store) paused() bool { return time.Now().UnixNano() < s.pausedUntil.Load() }

// get reads key from Redis within the timeout: the payload and hit, or a miss, corrupt, failed
// or skipped result. A failure pauses Redis (unless the caller's own context ended).
func (s *Store) get(ctx context.Context, key string) (string, int) {
	if !s.durable() || s.paused() {
		return "", skipped
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	v, err := s.rdb.Get(cctx, key).Result()
	cancel()
	switch {
	case err == nil:
		if p, ok := unseal(key, v); ok {
			return p, hit
		}
		return "", corrupt
	case errors.Is(err, redis.Nil):
		return "", miss
	case !callerDone(ctx):
		s.pausedUntil.Store(time.Now().Add(s.pause).UnixNano())
	}
	return "", failed
}

// callerDone reports whether the caller's context has ended or reached its deadline: go-redis
// sets the connection's deadline from the context's, so a read can time out at the caller's
// deadline a moment before the context says it is done, and that is no fault of Redis.
func callerDone(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// Resolve implements mapping.Store.
func (s *Store) Resolve(ctx context.Context, public string) (int64, error) {
	v, r := s.get(ctx, pKey(public))
	if r == hit {
		if internal, err := strconv.ParseInt(v, 10, 64); err == nil {
			s.reads[opResolve][hit].Inc()
			return internal, nil
		}
		r = corrupt
	}
	s.reads[opResolve][r].Inc()
	internal, err := s.inner.Resolve(ctx, public)
	if err == nil && r != skipped {
		s.keep(public, internal)
	}
	return internal, err
}

// Lookup implements mapping.Store.
func (s *Store) Lookup(ctx context.Context, internal int64) (string, error) {
	if internal == 0 {
		return s.inner.Lookup(ctx, internal)
	}
	public, r := s.get(ctx, iKey(internal))
	if r == hit {
		s.reads[opLookup][hit].Inc()
		return public, nil
	}
	s.reads[opLookup][r].Inc()
	public, err := s.inner.Lookup(ctx, internal)
	if err == nil && r != skipped {
		s.keep(public, internal)
	}
	return public, err
}

// Publish implements mapping.Store: the store below's, whose answer is then cached.
func (s *Store) Publish(ctx context.Context, internal int64, newPublic func() (string, error)) (string, error) {
	durable := s.durable()
	public, err := s.inner.Publish(ctx, internal, newPublic)
	if err == nil && durable {
		s.keep(public, internal)
	}
	return public, err
}

// keep writes both directions of a mapping to Redis in the background, if the store below still
// answers durably, Redis is not paused and a write slot is free; else the write is dropped.
func (s *Store) keep(public string, internal int64) {
	if !s.durable() {
		return
	}
	if s.paused() {
		s.writes[dropped].Inc()
		return
	}
	select {
	case s.slots <- struct{}{}:
	default:
		s.writes[dropped].Inc()
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.slots
		s.writes[dropped].Inc()
		return
	}
	s.bg.Add(1)
	s.mu.Unlock()
	// The public ID is copied: a caller's string may share memory with much more (the gateway's
	// are cut from the request line), which the goroutine would keep alive.
	public = strings.Clone(public)
	go func() {
		defer s.bg.Done()
		defer func() { <-s.slots }()
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		pk, ik := pKey(public), iKey(internal)
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, pk, seal(pk, strconv.FormatInt(internal, 10)), s.ttl)
			p.Set(ctx, ik, seal(ik, public), s.ttl)
			return nil
		})
		if err != nil {
			s.writes[writeFailed].Inc()
			return
		}
		s.writes[written].Inc()
	}()
}

// PutToken implements mapping.Store: the store below's, never cached.
func (s *Store) PutToken(ctx context.Context, handle string, value []byte, ttl time.Duration) error {
	return s.inner.PutToken(ctx, handle, value, ttl)
}

// GetToken implements mapping.Store: the store below's, never cached.
func (s *Store) GetToken(ctx context.Context, handle string) ([]byte, error) {
	return s.inner.GetToken(ctx, handle)
}

// Secret implements mapping.Store: the store below's, never cached.
func (s *Store) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	return s.inner.Secret(ctx, name, size)
}

// Volatile implements mapping.Durability: the store below's.
func (s *Store) Volatile() (bool, string) {
	if s.dur == nil {
		return true, "the store below the Redis cache does not report its durability"
	}
	return s.dur.Volatile()
}

// ReadsDurable implements mapping.Durability: the store below's.
func (s *Store) ReadsDurable() bool { return s.durable() }

// Close implements mapping.Store: it waits for the write-backs under way (each ends within the
// timeout), then closes the Redis client and the store below.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.bg.Wait()
	return errors.Join(s.rdb.Close(), s.inner.Close())
}
