package redismap

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/redis/go-redis/v9"
)

// acceptFlag is how the service lets an operator run on a volatile store (Options.AcceptVolatile).
const acceptFlag = "--accept-volatile-store"

// checkEvery is how often the store re-reads its nodes' persistence by default
// (Options.CheckEvery); checkTimeout bounds one reading.
const (
	checkEvery   = 10 * time.Second
	checkTimeout = 5 * time.Second
)

// durability is what one reading of the nodes' persistence found.
type durability struct {
	volatile bool
	why      string // why it is volatile: each volatile node, and what makes it so
	aofOff   bool   // a node keeps no AOF at all
	// always: every node that takes writes has AOF on and appendfsync always, so Redis answers a
	// read only after fsyncing the writes before it (see ReadsDurable).
	always bool
	// unsettled says why reads may not be durable although no node is volatile: a node is
	// writing an AOF rewrite (right after appendonly is turned on, the writes of that time reach
	// no AOF until the rewrite ends) or has replicas a failover could promote ("" if none).
	unsettled string
	at        time.Time // when the reading was sent
}

// checkDurability is New's reading: it refuses a volatile store unless Options.AcceptVolatile.
// Where each publish reads its node's persistence in its own transaction (Store.covers), it
// sends one such transaction to every node, so that a server or an ACL that refuses it stops
// the start rather than every publish.
func (s *Store) checkDurability(ctx context.Context) error {
	d, err := s.readDurability(ctx)
	if err != nil {
		return err
	}
	if !d.volatile && s.covers {
		var mu sync.Mutex
		var reasons []string
		if err := s.eachNode(ctx, func(ctx context.Context, c *redis.Client) error {
			why, _, err := coveredOn(ctx, c, func(redis.Pipeliner) {})
			if why != "" {
				mu.Lock()
				reasons = append(reasons, why)
				mu.Unlock()
			}
			return err
		}); err != nil {
			return err
		}
		if len(reasons) > 0 {
			slices.Sort(reasons)
			d = durability{volatile: true, why: strings.Join(reasons, "; ")}
		}
	}
	if d.volatile && !s.accept {
		return fmt.Errorf("%s, or start with %s", d.why, acceptFlag)
	}
	s.dur.Store(&d)
	return nil
}

// coveredOn runs queue's commands on c in one transaction that ends with a reading of c's
// persistence: MULTI; …; CONFIG GET appendonly appendfsync; EXEC. Redis runs a transaction
// whole, no other client's command in between, so the reading is the persistence the writes
// ran under; and a write that runs with AOF on and appendfsync always is fsynced before Redis
// answers it (turning AOF off fsyncs what was written before). why says why the reading makes
// the node volatile ("" if it does not): AOF off, an appendfsync other than always, or a
// reading the server refused (CONFIG renamed, an ACL without MULTI and EXEC), which nothing
// else can stand for on a server without WAITAOF. err is the transaction's first error (one of
// queue's commands, or a failure to reach c); a write whose reading makes the node volatile is
// not acknowledged, whatever err says.
func coveredOn(ctx context.Context, c *redis.Client, queue func(p redis.Pipeliner)) (why string, aofOff bool, err error) {
	var conf *redis.MapStringStringCmd
	_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		queue(p)
		conf = redis.NewMapStringStringCmd(ctx, "config", "get", "appendonly", "appendfsync")
		return p.Process(ctx, conf)
	})
	addr := c.Options().Addr
	if cerr := conf.Err(); cerr != nil {
		// EXECABORT: another command was refused, and its own error is err (nothing ran).
		if isReply(cerr) && !redis.HasErrorPrefix(cerr, "EXECABORT") {
			return fmt.Sprintf("redis %s refused the reading of its persistence in a publish's transaction (MULTI, CONFIG GET appendonly appendfsync, EXEC: %s): whether a write is on disk when Redis answers it cannot be verified, and WAITAOF, which would confirm it, needs Redis 7.2; allow them (redismap.ACL)",
				addr, strings.TrimSpace(cerr.Error())), false, err
		}
		if redis.HasErrorPrefix(cerr, "EXECABORT") {
			return "", false, err
		}
		// No reading (the server did not answer it): nothing may be acknowledged.
		return "", false, fmt.Errorf("%w: no reading of the persistence of redis %s: %w", errNotDurable, addr, cmp.Or(err, cerr))
	}
	conf0 := conf.Val()
	aof := map[string]string{"yes": "1", "no": "0"}[conf0["appendonly"]]
	if aof == "" {
		return fmt.Sprintf("redis %s did not answer CONFIG GET appendonly in a publish's transaction (%q): whether it keeps an AOF cannot be verified", addr, conf0["appendonly"]), false, err
	}
	why, aofOff = judge(addr, aof, false, conf0["appendfsync"], nil)
	return why, aofOff, err
}

// covered runs queue's commands in one transaction with a reading of the persistence of the node
// that holds key (coveredOn). If that reading makes the node volatile, the store turns volatile
// at once and covered returns mapping.ErrVolatile: nothing queue's commands answered may be
// acknowledged. Else it returns the transaction's error.
func (s *Store) covered(ctx context.Context, key string, queue func(p redis.Pipeliner)) error {
	var c *redis.Client
	switch r := s.rdb.(type) {
	case *redis.Client:
		c = r
	case *redis.ClusterClient:
		var err error
		if c, err = r.MasterForKey(ctx, key); err != nil {
			return err
		}
	default:
		return fmt.Errorf("cannot read the persistence of a %T in a transaction", s.rdb)
	}
	sent := time.Now()
	why, aofOff, err := coveredOn(ctx, c, queue)
	if why == "" {
		return err
	}
	s.turnVolatile(durability{volatile: true, why: why, aofOff: aofOff, at: sent})
	return volatileError(why)
}

// volatileError is Publish's refusal on a volatile store.
func volatileError(why string) error {
	return fmt.Errorf("%w: %s; publishes resume once it is durable again", mapping.ErrVolatile, why)
}

// turnVolatile records a publish's reading that found a node volatile, unless the store is
// volatile already (the last full reading names every volatile node) or has a newer reading.
func (s *Store) turnVolatile(d durability) {
	for {
		old := s.dur.Load()
		if old.volatile || d.at.Before(old.at) {
			return
		}
		if s.dur.CompareAndSwap(old, &d) {
			s.logChange(old, &d)
			return
		}
	}
}

// watchDurability re-reads the persistence every interval until life ends, so that a server made
// volatile while the store runs (CONFIG SET appendonly no) is seen within one interval, and one
// made durable again too. A reading that fails (Redis unreachable) keeps the last one: publishes
// fail then anyway, as unavailable.
func (s *Store) watchDurability(life context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-life.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(life, min(every, checkTimeout))
		sent := time.Now()
		d, err := s.readDurability(ctx)
		d.at = sent
		cancel()
		switch {
		case life.Err() != nil:
			return
		case err != nil:
			if !failing {
				s.log.Warn("redismap: could not re-read the store's persistence; keeping the last reading", "error", err.Error())
			}
			failing = true
		default:
			failing = false
			s.setDurability(d)
		}
	}
}

// setDurability records a reading, logging a change; a reading sent before the one the store
// holds (a publish's, which may have turned it volatile meanwhile) is dropped.
func (s *Store) setDurability(d durability) {
	for {
		old := s.dur.Load()
		if d.at.Before(old.at) {
			return
		}
		if s.dur.CompareAndSwap(old, &d) {
			s.logChange(old, &d)
			return
		}
	}
}

// logChange logs a change of the store's durability from old to d.
func (s *Store) logChange(old, d *durability) {
	publishes := "publishes are refused (store_volatile) until it is durable again"
	if s.accept {
		publishes = "publishes go on, accepted by " + acceptFlag
	}
	switch {
	case d.volatile && !old.volatile:
		s.log.Error("redismap: the store turned volatile: a mapping acknowledged now could be lost on a crash; "+publishes, "reason", d.why)
	case d.volatile && d.why != old.why:
		s.log.Error("redismap: the store is still volatile, now because: "+d.why+"; "+publishes, "reason", d.why)
	case !d.volatile && old.volatile:
		s.log.Info("redismap: the store is durable again (AOF on, every acknowledged write fsynced); publishes are acknowledged durably", "was", old.why)
	}
}

// readDurability reads the persistence of every node that takes writes (the server, or each
// Cluster master) and says whether the store is volatile, and why. Only INFO and CONFIG GET are
// sent: managed services allow INFO and often block CONFIG.
func (s *Store) readDurability(ctx context.Context) (durability, error) {
	var (
		mu        sync.Mutex
		reasons   []string
		aofOff    bool
		always    = true
		unsettled []string
	)
	check := func(ctx context.Context, c *redis.Client) error {
		n, err := nodeDurability(ctx, c, s.waitAOF)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if n.reason != "" {
			reasons = append(reasons, n.reason)
		}
		if n.unsettled != "" {
			unsettled = append(unsettled, n.unsettled)
		}
		aofOff = aofOff || n.aofOff
		always = always && n.fsync == "always"
		return nil
	}
	if err := s.eachNode(ctx, check); err != nil {
		return durability{}, err
	}
	if len(reasons) == 0 {
		slices.Sort(unsettled)
		return durability{always: always, unsettled: strings.Join(unsettled, "; ")}, nil
	}
	slices.Sort(reasons) // nodes answer concurrently: one order for the same cluster
	return durability{volatile: true, why: strings.Join(reasons, "; "), aofOff: aofOff}, nil
}

// eachNode calls f, concurrently, for every node that takes writes: the server, or each Cluster
// master.
func (s *Store) eachNode(ctx context.Context, f func(ctx context.Context, c *redis.Client) error) error {
	switch c := s.rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, f)
	case *redis.Ring:
		return c.ForEachShard(ctx, f)
	case *redis.Client:
		return f(ctx, c)
	default:
		return fmt.Errorf("cannot check the persistence of a %T", s.rdb)
	}
}

// waitFor returns whether a write is followed by WAITAOF and its numlocal. On a store accepted
// volatile with a node's AOF off, WAITAOF asking for a local fsync is an error: it waits for
// replicas only, or is not sent. On a store that refuses volatility, it still asks for the local
// fsync, so that a write racing the change of persistence is not acknowledged.
func (s *Store) waitFor() (wait bool, numlocal int) {
	numlocal = 1
	if s.accept && s.dur.Load().aofOff {
		numlocal = 0
	}
	return s.waitAOF && (numlocal > 0 || s.replicas > 0), numlocal
}

// writable returns mapping.ErrVolatile, with why, when the store refuses writes: the last
// reading found it volatile and Options.AcceptVolatile is not set.
func (s *Store) writable() error {
	if d := s.dur.Load(); d.volatile && !s.accept {
		return volatileError(d.why)
	}
	return nil
}

// nodeReading is one node's persistence as nodeDurability read it.
type nodeReading struct {
	reason string // why it is volatile ("" if it is not)
	aofOff bool   // it keeps no AOF at all
	fsync  string // its appendfsync where AOF is on and CONFIG GET answered ("" otherwise)
	// unsettled says why reads of a node that is not volatile may still not be durable ("" if
	// they are): an AOF rewrite in progress or scheduled (after appendonly is turned on at run
	// time, the writes made during the first rewrite are in no AOF until it ends), or replicas
	// attached to it (INFO replication connected_slaves: a failover may promote one that had not
	// received a write this node fsynced). A node that refuses INFO replication counts as having
	// replicas.
	unsettled string
}

// nodeDurability reads one node's persistence. err is set only when the node could not be asked.
// waitAOF says that the store follows each acknowledged write with WAITAOF.
func nodeDurability(ctx context.Context, c *redis.Client, waitAOF bool) (nodeReading, error) {
	addr := c.Options().Addr
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return nodeReading{}, err
	}
	// WAITAOF covers this node only if it has the command; the store's version check may have
	// asked another node of a cluster.
	waitAOF = waitAOF && versionAtLeast(info, 7, 2)
	info, err = c.Info(ctx, "persistence").Result()
	if isReply(err) {
		return nodeReading{reason: fmt.Sprintf("redis %s refused INFO persistence (%s): whether it keeps an AOF cannot be verified; allow INFO", addr, strings.TrimSpace(err.Error()))}, nil
	}
	if err != nil {
		return nodeReading{}, err
	}
	var n nodeReading
	aof, _ := infoField(info, "aof_enabled")
	var fsyncErr error
	if aof == "1" {
		// appendfsync is not in INFO: only CONFIG GET tells it.
		var conf map[string]string
		conf, fsyncErr = c.ConfigGet(ctx, "appendfsync").Result()
		if fsyncErr != nil && !isReply(fsyncErr) {
			return nodeReading{}, fsyncErr
		}
		n.fsync = conf["appendfsync"]
	}
	n.reason, n.aofOff = judge(addr, aof, waitAOF, n.fsync, fsyncErr)
	for _, f := range []string{"aof_rewrite_in_progress", "aof_rewrite_scheduled"} {
		if v, _ := infoField(info, f); v == "1" {
			n.unsettled = fmt.Sprintf("redis %s has %s:1", addr, f)
			break
		}
	}
	if n.unsettled == "" {
		info, err = c.Info(ctx, "replication").Result()
		switch {
		case isReply(err):
			n.unsettled = fmt.Sprintf("redis %s refused INFO replication", addr)
		case err != nil:
			return nodeReading{}, err
		default:
			if v, ok := infoField(info, "connected_slaves"); !ok || v != "0" {
				n.unsettled = fmt.Sprintf("redis %s has replicas (connected_slaves:%s)", addr, v)
			}
		}
	}
	return n, nil
}

// judge decides whether a node is volatile from its INFO persistence aof_enabled ("" if the
// field is missing), whether WAITAOF covers it, and its answer to CONFIG GET appendfsync (fsync
// is "" when the answer did not have it; fsyncErr is the server's error reply).
func judge(addr, aofEnabled string, waitAOF bool, fsync string, fsyncErr error) (reason string, aofOff bool) {
	const fix = "run it with appendonly yes and appendfsync always"
	switch {
	case aofEnabled == "0":
		return fmt.Sprintf("redis %s has AOF off (aof_enabled:0): an acknowledged mapping would be lost on a crash; %s", addr, fix), true
	case aofEnabled != "1":
		return fmt.Sprintf("redis %s does not report aof_enabled in INFO persistence: whether it keeps an AOF cannot be verified; %s", addr, fix), false
	case fsync == "always":
		return "", false
	case waitAOF && (fsync == "everysec" || fsync == ""):
		// The store follows each acknowledged write with WAITAOF, which answers only once the
		// write is fsynced to this node's AOF whatever appendfsync says: everysec delays the
		// answer and loses nothing acknowledged. So a policy CONFIG does not tell (CONFIG is
		// blocked, as on managed services) is accepted too.
		return "", false
	case fsyncErr != nil:
		return fmt.Sprintf("redis %s refused CONFIG GET appendfsync (%s): its fsync policy cannot be verified, and WAITAOF, which would confirm each fsync, needs Redis 7.2; allow CONFIG GET and %s, or use Redis 7.2 or later", addr, strings.TrimSpace(fsyncErr.Error()), fix), false
	case fsync == "":
		return fmt.Sprintf("redis %s did not answer CONFIG GET appendfsync: its fsync policy cannot be verified; %s", addr, fix), false
	case waitAOF:
		return fmt.Sprintf("redis %s has appendfsync %s: the store accepts always, or everysec with WAITAOF; %s", addr, fsync, fix), false
	default:
		return fmt.Sprintf("redis %s has appendfsync %s: an acknowledged mapping not yet fsynced would be lost on a crash (WAITAOF, which would wait for the fsync, needs Redis 7.2); %s", addr, fsync, fix), false
	}
}

// infoField returns the value of name in an INFO answer ("name:value" lines, CRLF-terminated).
func infoField(info, name string) (string, bool) {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v, true
		}
	}
	return "", false
}

// isReply reports whether err is the server's error reply (the command was refused), rather than
// a failure to reach the server.
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// Volatile reports whether the last reading of the store's persistence (New's, then one every
// Options.CheckEvery) found it volatile: a node with AOF off, an fsync policy that loses
// acknowledged writes, or one that could not be verified; and why. A volatile store refuses
// publishes (mapping.ErrVolatile) unless Options.AcceptVolatile is set.
func (s *Store) Volatile() (bool, string) {
	d := s.dur.Load()
	return d.volatile, d.why
}

// ReadsDurable reports whether whatever Resolve and Lookup answer now is durable, so that a
// caller may keep it (mapping/cached): the last reading of the persistence found every node that
// takes writes with AOF on and appendfsync always, which makes Redis fsync the writes before a
// read and only then answer it, and the store waits for no replicas (a read cannot tell whether a
// write reached them). With everysec (WAITAOF confirming only the writer's own fsyncs), a
// persistence that could not be read, a volatile store, Options.WaitReplicas above 0, a node
// writing an AOF rewrite or with replicas attached, or a cluster client that reads from replicas,
// it is false. A change of persistence is seen at the next reading (Options.CheckEvery); the
// cache drops what it holds when it sees ReadsDurable false (mapping/cached).
func (s *Store) ReadsDurable() bool {
	d := s.dur.Load()
	return !d.volatile && d.always && d.unsettled == "" && s.replicas == 0 && !s.readsReplicas()
}

// readsReplicas reports whether the client may send a read to a replica (cluster URL options
// read_only, route_by_latency, route_randomly), whose persistence no reading checks.
func (s *Store) readsReplicas() bool {
	c, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return false
	}
	o := c.Options()
	return o.ReadOnly || o.RouteByLatency || o.RouteRandomly
}
