// Package redismap keeps the public-ID mapping in Redis (github.com/redis/go-redis/v9), standalone
// or Cluster.
//
// On a standalone server (or a primary with replicas) both directions are written by one Lua script,
// atomically and in one round trip: public → internal with NX, then internal → public, unless the
// internal ID already has a public ID, which is returned instead. Nothing can be half done, and a
// publish costs one fsync, like a single SET.
//
// On Redis Cluster the two directions live in different slots, so no command spans both keys:
//
//  1. SET pid:p:<public> "0:<internal>" NX        (pending: the public ID is taken, not yet canonical)
//  2. SET pid:i:<internal> <public> NX            (the internal ID's one public ID: first writer wins)
//  3. SET pid:p:<public> "1:<internal>" XX        (committed; sent without waiting: see below)
//
// Publish acknowledges after step 2: from then on the mapping can always be recovered, and step 3
// only spares readers a repair. A loser of step 2 deletes its pending key and returns the winner's
// public ID. A create cut short between the steps is repaired idempotently by whoever next reads
// the pending key: if the internal ID has no public ID yet, this one becomes it; if it has another,
// the pending key is an orphan that was never acknowledged, and it is deleted. So a public ID
// resolves only if it is the canonical one of its internal ID.
//
// Resolve's and Lookup's GETs and the publish script go through go-redis's autopipeliners, which
// batch the commands of concurrent callers into pipelines: fewer system calls per request on
// both sides. Reads keep one batch in flight (the deepest pipelines); publishes keep up to four,
// since each batch waits for Redis's fsync. A command queued there runs to the client's read
// timeout even if its caller's context ends.
//
// Durability: run Redis with appendonly yes and appendfsync always (the default this package
// documents and the tests use), so an acknowledged write is on disk. Where the server is 7.2 or
// later, every write that a publish acknowledges is followed by WAITAOF, for the local fsync and
// Options.WaitReplicas replicas' (plain WAIT does not guarantee it). WAITAOF waits only for its
// own connection's writes, so it goes in one pipeline with the write, on the node holding the key.
// Asking for replicas on an older server is an error, not a silent downgrade. On an older server
// (7.0 has no WAITAOF), every answer a publish acknowledges runs in a transaction that ends with
// a reading of its node's persistence: MULTI; EVALSHA publish (on Cluster, each SET NX, and the
// GET of an internal ID's public ID); CONFIG GET appendonly appendfsync; EXEC, in one round trip.
// Redis runs a transaction whole, so the reading is the persistence the write ran under, and a
// write that runs with AOF on and appendfsync always is fsynced before Redis answers it. A
// reading that finds AOF off, an appendfsync other than always, or that the server refused, is
// not acknowledged: Publish fails with mapping.ErrVolatile and the store turns volatile at once.
// Its mapping may have been written (the same internal ID gets the same public ID on a retry),
// so while the store is volatile a publish of an internal ID that has its public ID is answered
// only through the same transaction, if the node is durable by then. Concurrent publishes share
// one such transaction and its reading (batch.go), since the autopipeliner keeps MULTI off its
// shared connections. New refuses a volatile Redis: AOF off on a node that takes writes (INFO
// persistence), or an appendfsync other than always (CONFIG GET), everysec or a blocked CONFIG
// being enough on 7.2+, where WAITAOF confirms each fsync; on older servers also one that
// refuses the transaction. Options.AcceptVolatile accepts one, and Store.Volatile tells why;
// publishes on such a store read nothing per write.
//
// The store reads the same again every Options.CheckEvery (10 s) while it runs, since a server's
// persistence can change under it (CONFIG SET appendonly no, a node replaced). While the last
// reading says volatile, Publish makes no new mapping: it fails with mapping.ErrVolatile (see
// above for an internal ID that has its public ID already), unless Options.AcceptVolatile;
// Resolve and Lookup answer as ever. A reading that finds the store durable again ends that.
// Between a change and the next reading, each publish's own reading (older servers) or WAITAOF,
// which refuses to confirm a local fsync where AOF is off (7.2+), keeps a publish from being
// acknowledged on a store that has just turned volatile.
//
// Tokens are one key each, tok:<handle>, written with SET NX PX (their ttl, in milliseconds) and
// read with GET, through the same autopipeliners; on Cluster each lives in its own slot, like any
// single key. Redis expires them itself (a GET never answers an expired key). A token is not a
// mapping: a lost one costs its customer a restart of the listing it continued, so tokens are
// acknowledged without WAITAOF (on appendfsync always Redis fsyncs them before it answers anyway),
// and they are written while the store is volatile, when publishes are refused. With a maxmemory
// policy of volatile-*, Redis evicts tokens (which have a ttl) before any mapping (which has none).
//
// A secret is one key, pid:s:<name> (under the mappings' prefix, so the store's ACL covers it),
// without a ttl: SET NX of fresh random bytes, then GET of whatever the key holds, so every
// caller gets the value written first. Like a token it is acknowledged without WAITAOF, and
// written while the store is volatile.
//
// Scan lists the mappings page by page (SCAN MATCH pid:p:* on the server, or on each master of a
// cluster in turn), as mapping.Replica's Scan does: the source of idgenctl publicids backfill,
// which copies a Redis store into DynamoDB. Its user needs ACLScan beside ACL.
package redismap

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/redis/go-redis/v9"
)

// waitAOFTimeout is how long WAITAOF waits for the fsyncs it asks for; a write not on disk by
// then is not acknowledged.
const waitAOFTimeout = time.Second

// commitTimeout bounds the background commit of a Cluster publish (step 3), and a pending key's
// repair in Resolve, which outlives its caller's context.
const commitTimeout = 2 * time.Second

// Store is a mapping store on a Redis client (redis.NewClient or redis.NewClusterClient).
type Store struct {
	rdb     redis.UniversalClient
	ap      *redis.AutoPipeliner // reads from concurrent callers, batched into pipelines (one batch in flight)
	writes  *redis.AutoPipeliner // publish scripts: batches wait for an fsync, so several in flight
	atomic  bool                 // one server holds every key: publish with publishScript
	waitAOF bool                 // the server has WAITAOF (7.2+): writes are followed by it (see waitFor)
	// covers: each write a publish acknowledges runs in a transaction with a reading of its
	// node's persistence (see covered): no WAITAOF, and not Options.AcceptVolatile.
	covers   bool
	batches  chan *coveredPublish // with covers on one server: publishes waiting for a transaction (batch.go)
	replicas int

	accept bool                       // Options.AcceptVolatile
	dur    atomic.Pointer[durability] // the last reading of the nodes' persistence

	log *slog.Logger
	// The store's lifetime: background commits run on life, which Close cancels before it waits
	// for them (bg) and closes the client.
	life   context.Context
	stop   context.CancelFunc
	mu     sync.Mutex // guards closed and bg.Go against Close's bg.Wait
	closed bool
	bg     sync.WaitGroup
}

var _ mapping.Store = (*Store)(nil)

// Options for New.
type Options struct {
	// WaitReplicas is how many replicas WAITAOF waits for (7.2+ only). Default 0: local fsync.
	WaitReplicas int
	// AcceptVolatile accepts a store found volatile (see New), at New and while it runs, instead
	// of refusing it; Store.Volatile then reports it, and why.
	AcceptVolatile bool
	// CheckEvery is how often the store re-reads the persistence of every node that takes writes
	// (as New does), so that a server made volatile while it runs (CONFIG SET appendonly no) is
	// seen within that time: Publish then fails with mapping.ErrVolatile, unless AcceptVolatile,
	// and Volatile reports it; a server made durable again is seen the same way. Default 10 s;
	// negative: New's reading only.
	CheckEvery time.Duration
	// Logger receives what the store cannot return: a failed background commit, an orphan
	// pending key it could not delete. Default: discard.
	Logger *slog.Logger
}

// New returns a store; it checks the server version to know whether WAITAOF exists. It refuses
// a volatile store, unless o.AcceptVolatile: one where a node that takes writes has AOF off
// (INFO persistence aof_enabled:0), or an appendfsync (CONFIG GET) other than always, everysec
// being enough where WAITAOF confirms each fsync (7.2+), or a persistence it cannot verify.
func New(ctx context.Context, rdb redis.UniversalClient, o Options) (*Store, error) {
	s, err := newStore(ctx, rdb, o)
	return s, mapErr("new", err)
}

func newStore(ctx context.Context, rdb redis.UniversalClient, o Options) (*Store, error) {
	_, cluster := rdb.(*redis.ClusterClient)
	s := &Store{rdb: rdb, replicas: o.WaitReplicas, atomic: !cluster, accept: o.AcceptVolatile, log: o.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return nil, err
	}
	s.waitAOF = versionAtLeast(info, 7, 2)
	if o.WaitReplicas > 0 && !s.waitAOF {
		return nil, errors.New("waiting for replicas needs WAITAOF, which Redis has from 7.2 on; this server is older")
	}
	s.covers = !s.waitAOF && !s.accept
	if err := s.checkDurability(ctx); err != nil {
		return nil, err
	}
	// MaxBatchSize 100 matches the capacity of the queue slices go-redis keeps in its sync.Pool.
	// Larger batches made it allocate a new queue on every flush and pool it afterwards. Pinned to
	// one core at GOGC=400, that garbage outgrew each collection (TestHeapStaysSmallUnderLoad).
	if s.ap, err = rdb.AutoPipelineWithOptions(&redis.AutoPipelineOptions{MaxBatchSize: 100}); err != nil {
		return nil, err
	}
	// A batch of writes is answered only after Redis's fsync; with one batch in flight the next
	// would wait a whole fsync before it is even sent. Each publish waits for its own answer and
	// depends on no other, so the batches need no order between them. (A client caches one
	// pipeliner per face, whatever options a later call passes: the writes use the other face,
	// whose commands return at once and block in Result until executed.)
	if s.writes, err = rdb.AsyncAutoPipelineWithOptions(&redis.AutoPipelineOptions{MaxBatchSize: 100, MaxConcurrentBatches: 4, Unordered: true}); err != nil {
		return nil, err
	}
	if s.writes == s.ap {
		return nil, errors.New("the client gave one autopipeliner for reads and writes")
	}
	s.life, s.stop = context.WithCancel(context.Background())
	if s.covers && s.atomic {
		s.batches = make(chan *coveredPublish, coveredBatchMax)
		for range coveredBatches {
			s.background(s.batchPublishes)
		}
	}
	if every := cmp.Or(o.CheckEvery, checkEvery); every > 0 {
		s.background(func(life context.Context) { s.watchDurability(life, every) })
	}
	return s, nil
}

func versionAtLeast(info string, major, minor int) bool {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			parts := strings.Split(v, ".")
			if len(parts) < 2 {
				return false
			}
			a, _ := strconv.Atoi(parts[0])
			b, _ := strconv.Atoi(parts[1])
			return a > major || a == major && b >= minor
		}
	}
	return false
}

// ACL is the Redis ACL a user of this store needs, and all it needs on Redis 7.2 and later
// beside ACL72 (ACL SETUSER NAME on >PASSWORD followed by these rules): the store's keys and the
// commands its publishes, lookups, resolves and tokens send, and INFO for its durability
// readings. Each program that opens the store (the internal API, the gateway) gets a user of
// its own, so that its password can be rotated or revoked apart. They forbid what no program of
// the service sends (FLUSHALL, KEYS, CONFIG, ACL, another key space), but not a SET without NX
// over an existing key, which the store never sends and Redis's ACL cannot tell from its own SET
// XX of a pending key, nor a DEL of one (a Cluster publish deletes its own losing pending key):
// a program an attacker controls could overwrite or delete a mapping, so the store's backups are
// what restore one, not the ACL.
const ACL = "resetkeys ~pid:* ~tok:* resetchannels -@all +get +set +del +eval +evalsha +script|load " +
	"+info +multi +exec +ping +hello +client|setname +readonly " +
	"+cluster|slots +cluster|shards +cluster|nodes +command"

// ACL72 are the rules ACL needs beside it on Redis 7.2 and later (WAITAOF, and the client name
// go-redis sets).
const ACL72 = "+waitaof +client|setinfo"

// ACLConfigRead is the rule ACL needs beside it on a server before 7.2, which has no WAITAOF: the
// durability readings, and the reading in each publish's transaction, read appendonly and
// appendfsync with CONFIG GET, and without it the store finds its durability unreadable and
// refuses to start (unless it accepts a volatile store). CONFIG GET
// cannot be narrowed to one parameter, so it lets its user read every setting, requirepass and
// masterauth included: give it only where the default user is off (no requirepass) and
// replication runs as a user of its own (masteruser) whose password grants replication alone.
const ACLConfigRead = "+config|get"

func pKey(public string) string  { return "pid:p:" + public }
func tKey(handle string) string  { return "tok:" + handle }
func iKey(internal int64) string { return "pid:i:" + strconv.FormatInt(internal, 10) }
func sKey(name string) string    { return "pid:s:" + name }

// errNotDurable: WAITAOF did not confirm a write's fsyncs in time (or failed); the write is not
// acknowledged.
var errNotDurable = errors.New("the write's fsync was not confirmed")

// mapErr is the driver's one error mapping, applied once by every exported method: a Redis that
// cannot serve the call now becomes mapping.ErrUnavailable (wrapping the native error, so
// errors.As still reaches it); mapping.ErrNotFound, the caller's own errors (newPublic's),
// refusals such as WRONGPASS or NOPERM, and corrupt values stay what they are.
func mapErr(op string, err error) error {
	var np newPublicError
	switch {
	case err == nil || errors.Is(err, mapping.ErrNotFound):
		return err
	case !errors.As(err, &np) && unavailable(err):
		return fmt.Errorf("redismap: %s: %w: %w", op, mapping.ErrUnavailable, err)
	}
	return fmt.Errorf("redismap: %s: %w", op, err)
}

// unavailable reports whether err means Redis cannot serve the call now, so a retry (later, on
// another node after a failover) may succeed: no connection (refused, reset, closed, timed out,
// pool exhausted), the caller's deadline, a server loading its data, a replica or a cluster not
// ready (READONLY, CLUSTERDOWN, MASTERDOWN, TRYAGAIN, NOREPLICAS), a server busy with a script or
// out of memory, or a write whose fsync WAITAOF did not confirm.
func unavailable(err error) bool {
	var ne net.Error
	switch {
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted),
		errors.Is(err, redis.ErrAutoPipelineTimeout), errors.Is(err, redis.ErrAutoPipelineQueueFull),
		errors.Is(err, errNotDurable):
		return true
	}
	return redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsClusterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsMasterDownError(err) || redis.IsMaxClientsError(err) ||
		redis.IsNoReplicasError(err) || redis.IsOOMError(err) || redis.HasErrorPrefix(err, "BUSY")
}

// publishScript is a whole create on one server. KEYS: pid:i:<internal>, pid:p:<candidate>;
// ARGV: the candidate, "1:<internal>". Returns {0, existing} when the internal ID already has a
// public ID, {1, candidate} when the candidate became it, {2} when the candidate is taken.
var publishScript = redis.NewScript(`
local p = redis.call('GET', KEYS[1])
if p then return {0, p} end
if not redis.call('SET', KEYS[2], ARGV[2], 'NX') then return {2} end
redis.call('SET', KEYS[1], ARGV[1])
return {1, ARGV[1]}
`)

// Publish implements mapping.Store.
func (s *Store) Publish(ctx context.Context, internal int64, newPublic func() (string, error)) (string, error) {
	if err := s.writable(); err != nil {
		// A volatile store makes no new mapping, but one acknowledged before is only read; where
		// each publish reads its node's persistence, that read is covered too, since the mapping
		// may have been written by a publish refused since.
		lookup := s.Lookup
		if s.covers {
			lookup = func(ctx context.Context, internal int64) (string, error) {
				pub, err := s.lookupCovered(ctx, internal)
				return pub, mapErr("publish", err)
			}
		}
		pub, lerr := lookup(ctx, internal)
		if errors.Is(lerr, mapping.ErrNotFound) {
			return "", mapErr("publish", err)
		}
		return pub, lerr
	}
	pub, err := s.publish(ctx, internal, newPublic)
	return pub, mapErr("publish", err)
}

// newPublicError is newPublic's error, kept apart from Redis's so mapErr never takes it for
// unavailability.
type newPublicError struct{ err error }

func (e newPublicError) Error() string { return "new public ID: " + e.err.Error() }
func (e newPublicError) Unwrap() error { return e.err }

func (s *Store) publish(ctx context.Context, internal int64, newPublic func() (string, error)) (string, error) {
	if s.atomic {
		return s.publishAtomic(ctx, internal, newPublic)
	}
	for range 5 {
		var pub string
		var err error
		if s.covers {
			pub, err = s.lookupCovered(ctx, internal)
		} else {
			pub, err = s.rdb.Get(ctx, iKey(internal)).Result()
		}
		if err == nil {
			// Make sure the winner's public key is committed (its writer may have stopped).
			if _, err := s.commit(ctx, pub, internal); err != nil {
				return "", err
			}
			return pub, nil
		}
		if !errors.Is(err, redis.Nil) && !errors.Is(err, mapping.ErrNotFound) {
			return "", err
		}
		if pub, err = newPublic(); err != nil {
			return "", newPublicError{err}
		}
		ok, err := s.setNX(ctx, pKey(pub), "0:"+strconv.FormatInt(internal, 10))
		if err != nil {
			return "", err
		}
		if !ok {
			continue // a 128-bit collision: take another public ID
		}
		won, err := s.setNX(ctx, iKey(internal), pub)
		if err != nil {
			return "", err
		}
		if !won {
			// Ours, pending, never acknowledged: an orphan left behind is deleted by the first
			// Resolve that reads it.
			if err := s.rdb.Del(ctx, pKey(pub)).Err(); err != nil {
				s.log.Warn("redismap: could not delete a losing pending key", "key", pKey(pub), "error", err.Error())
			}
			continue // read the winner
		}
		// The mapping is complete and durable once both NX writes are: the commit only saves
		// readers the repair step, so it is sent without waiting for it (a lost commit is
		// repaired by the first read).
		s.background(func(life context.Context) {
			cctx, cancel := context.WithTimeout(life, commitTimeout)
			defer cancel()
			if err := s.rdb.SetXX(cctx, pKey(pub), "1:"+strconv.FormatInt(internal, 10), 0).Err(); err != nil {
				s.log.Debug("redismap: background commit failed; the first read repairs it", "key", pKey(pub), "error", err.Error())
			}
		})
		return pub, nil
	}
	return "", errors.New("could not publish after 5 attempts")
}

func (s *Store) publishAtomic(ctx context.Context, internal int64, newPublic func() (string, error)) (string, error) {
	ikey, committed := iKey(internal), "1:"+strconv.FormatInt(internal, 10)
	for range 5 {
		cand, err := newPublic()
		if err != nil {
			return "", newPublicError{err}
		}
		var res []any
		if wait, _ := s.waitFor(); wait {
			res, err = s.publishWaitAOF(ctx, []string{ikey, pKey(cand)}, cand, committed)
		} else if s.covers {
			res, err = s.publishCovered(ctx, []string{ikey, pKey(cand)}, cand, committed)
		} else {
			res, err = publishScript.Run(ctx, s.writes, []string{ikey, pKey(cand)}, cand, committed).Slice()
		}
		if err != nil {
			return "", err
		}
		if len(res) == 2 {
			if pub, ok := res[1].(string); ok {
				return pub, nil
			}
		}
		if len(res) != 1 {
			return "", fmt.Errorf("unexpected script answer %v", res)
		}
		// The candidate collided with an existing public ID: take another.
	}
	return "", errors.New("could not publish after 5 attempts")
}

// commit makes sure pid:p:<pub> is committed for internal, writing it when missing or pending.
func (s *Store) commit(ctx context.Context, pub string, internal int64) (bool, error) {
	v, err := s.rdb.Get(ctx, pKey(pub)).Result()
	want := "1:" + strconv.FormatInt(internal, 10)
	if err == nil && v == want {
		return false, nil
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	_, err = s.onNode(ctx, pKey(pub), func(p redis.Pipeliner) { p.Set(ctx, pKey(pub), want, 0) })
	return true, err
}

// publishWaitAOF runs the publish script and WAITAOF in one pipeline (7.2+ servers).
func (s *Store) publishWaitAOF(ctx context.Context, keys []string, args ...any) ([]any, error) {
	var run *redis.Cmd
	if _, err := s.onNode(ctx, keys[0], func(p redis.Pipeliner) { run = publishScript.Eval(ctx, p, keys, args...) }); err != nil {
		return nil, err
	}
	return run.Slice()
}

// lookupCovered is Lookup's GET in a transaction with a reading of its node's persistence
// (covered): an answer to a publish, which a volatile node does not give, since the mapping may
// have been written by a publish refused there. An internal ID without a public ID is
// mapping.ErrNotFound.
func (s *Store) lookupCovered(ctx context.Context, internal int64) (string, error) {
	var get *redis.StringCmd
	err := s.covered(ctx, iKey(internal), func(p redis.Pipeliner) { get = p.Get(ctx, iKey(internal)) })
	if errors.Is(err, redis.Nil) {
		return "", mapping.ErrNotFound
	}
	if err != nil {
		return "", err
	}
	return get.Val(), nil
}

// setNX is SET key val NX, followed by WAITAOF where the server has it, or in a transaction with
// a reading of its node's persistence (covered).
func (s *Store) setNX(ctx context.Context, key, val string) (bool, error) {
	if wait, _ := s.waitFor(); !wait {
		if !s.covers {
			return s.rdb.SetNX(ctx, key, val, 0).Result()
		}
		var set *redis.BoolCmd
		if err := s.covered(ctx, key, func(p redis.Pipeliner) { set = p.SetNX(ctx, key, val, 0) }); err != nil {
			return false, err
		}
		return set.Val(), nil
	}
	var set *redis.BoolCmd
	if _, err := s.onNode(ctx, key, func(p redis.Pipeliner) { set = p.SetNX(ctx, key, val, 0) }); err != nil {
		return false, err
	}
	return set.Val(), nil
}

// onNode sends queue's commands in one pipeline on the node holding key, followed by WAITAOF
// (for the local fsync and s.replicas replicas) where the server has it. WAITAOF waits only for
// the writes of the connection it is sent on, hence one pipeline, on one node.
func (s *Store) onNode(ctx context.Context, key string, queue func(p redis.Pipeliner)) ([]redis.Cmder, error) {
	waitAOF, numlocal := s.waitFor()
	var c redis.Cmdable = s.rdb
	if cc, ok := s.rdb.(*redis.ClusterClient); ok && waitAOF {
		node, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return nil, err
		}
		c = node
	}
	var wait *redis.Cmd
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		queue(p)
		if waitAOF {
			wait = p.Do(ctx, "WAITAOF", numlocal, s.replicas, waitAOFTimeout.Milliseconds())
		}
		return nil
	})
	if wait != nil {
		// WAITAOF's own failure first: the pipeline's error is the first failed command's.
		res, werr := wait.Int64Slice()
		if werr != nil {
			return nil, fmt.Errorf("%w: WAITAOF: %w", errNotDurable, werr)
		}
		if len(res) != 2 || res[0] < int64(numlocal) || res[1] < int64(s.replicas) {
			return nil, fmt.Errorf("%w: WAITAOF: %v: the write did not reach the AOF of this server and %d replicas within %v",
				errNotDurable, res, s.replicas, waitAOFTimeout)
		}
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	return cmds, nil
}

// Lookup implements mapping.Store: one GET. An internal ID's public ID was acknowledged once
// this key was written (on Cluster its public key may still be pending: Resolve repairs it).
func (s *Store) Lookup(ctx context.Context, internal int64) (string, error) {
	pub, err := s.ap.Get(ctx, iKey(internal)).Result()
	if errors.Is(err, redis.Nil) {
		return "", mapping.ErrNotFound
	}
	return pub, mapErr("lookup", err)
}

// Resolve implements mapping.Store: one GET in the common case; a pending key is repaired.
func (s *Store) Resolve(ctx context.Context, public string) (int64, error) {
	internal, err := s.resolve(ctx, public)
	return internal, mapErr("resolve", err)
}

func (s *Store) resolve(ctx context.Context, public string) (int64, error) {
	v, err := s.ap.Get(ctx, pKey(public)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, mapping.ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	state, num, ok := strings.Cut(v, ":")
	internal, perr := strconv.ParseInt(num, 10, 64)
	if !ok || perr != nil {
		return 0, fmt.Errorf("corrupt value %q at %s", v, pKey(public))
	}
	if state == "1" {
		return internal, nil
	}
	// Pending: a create was cut short. Finish it, or find that another public ID won.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if _, err := s.setNX(rctx, iKey(internal), public); err != nil {
		return 0, err
	}
	winner, err := s.rdb.Get(rctx, iKey(internal)).Result()
	if err != nil {
		return 0, err
	}
	if winner != public {
		// An orphan, never acknowledged: not found, whether or not the delete succeeds.
		if err := s.rdb.Del(rctx, pKey(public)).Err(); err != nil {
			s.log.Warn("redismap: could not delete an orphan pending key", "key", pKey(public), "error", err.Error())
		}
		return 0, mapping.ErrNotFound
	}
	if _, err := s.commit(rctx, public, internal); err != nil {
		return 0, err
	}
	return internal, nil
}

// PutToken implements mapping.Store: SET tok:<handle> value NX PX ttl, without WAITAOF, whatever
// the last reading of the persistence found (see the package's doc).
func (s *Store) PutToken(ctx context.Context, handle string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("redismap: put token: ttl %v: want a positive duration", ttl)
	}
	ttl = (ttl + time.Millisecond - 1).Truncate(time.Millisecond) // PX: whole milliseconds
	err := s.writes.SetArgs(ctx, tKey(handle), value, redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("redismap: put token: %w", mapping.ErrTokenTaken)
	}
	return mapErr("put token", err)
}

// GetToken implements mapping.Store: one GET.
func (s *Store) GetToken(ctx context.Context, handle string) ([]byte, error) {
	v, err := s.ap.Get(ctx, tKey(handle)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, mapping.ErrNotFound
	}
	if err != nil {
		return nil, mapErr("get token", err)
	}
	return v, nil
}

// Secret implements mapping.Store: SET pid:s:<name> <fresh bytes> NX, then GET, without WAITAOF.
func (s *Store) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("redismap: secret %q: size %d: want a positive size", name, size)
	}
	fresh := make([]byte, size)
	_, _ = rand.Read(fresh) // crypto/rand.Read never fails
	if err := s.rdb.SetNX(ctx, sKey(name), fresh, 0).Err(); err != nil {
		return nil, mapErr("secret", err)
	}
	v, err := s.rdb.Get(ctx, sKey(name)).Bytes()
	if err != nil {
		if errors.Is(err, redis.Nil) {
			err = errors.New("the secret's key is gone right after its SET NX")
		}
		return nil, mapErr("secret", err)
	}
	if len(v) != size {
		return nil, fmt.Errorf("redismap: secret %q holds %d bytes, want %d", name, len(v), size)
	}
	return v, nil
}

// background runs f on its own goroutine for the store's lifetime: Close cancels f's context
// and waits for it. After Close, f does not run.
func (s *Store) background(f func(life context.Context)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.bg.Go(func() { f(s.life) })
}

// Close implements mapping.Store: it stops the background commits, waits for them, and closes
// the client. A second Close does nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.bg.Wait()
	return s.rdb.Close()
}
