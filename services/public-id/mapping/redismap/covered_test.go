package redismap_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/redis/go-redis/v9"
)

// loadResult is what publishers under load saw around a change of the server's persistence.
type loadResult struct {
	acked     map[int64]string // every acknowledged publish: internal → public
	ackedLate int              // of them, publishes sent after the change had returned
	refused   int              // publishes refused with mapping.ErrVolatile
	volatile  bool             // Store.Volatile right after the first refusal
}

// publishUnderLoad publishes fresh internal IDs from 16 goroutines through s for before, then
// runs change (a CONFIG SET on the server), and goes on for after. Any error but
// mapping.ErrVolatile fails the test.
func publishUnderLoad(t *testing.T, s *redismap.Store, before, after time.Duration, change func()) loadResult {
	t.Helper()
	ctx := context.Background()
	maker, _ := publicid.NewMaker("ord")
	fresh := func() (string, error) { return maker.New("ord") }
	var (
		next     atomic.Int64
		changed  atomic.Bool // set once change has returned
		stop     atomic.Bool
		mu       sync.Mutex
		res      = loadResult{acked: map[int64]string{}}
		firstErr error
		wg       sync.WaitGroup
	)
	for range 16 {
		wg.Go(func() {
			for !stop.Load() {
				in := next.Add(1)
				late := changed.Load()
				pub, err := s.Publish(ctx, in, fresh)
				mu.Lock()
				switch {
				case err == nil:
					res.acked[in] = pub
					if late {
						res.ackedLate++
					}
				case errors.Is(err, mapping.ErrVolatile):
					if res.refused == 0 {
						res.volatile, _ = s.Volatile()
					}
					res.refused++
				case firstErr == nil:
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(before)
	change()
	changed.Store(true)
	time.Sleep(after)
	stop.Store(true)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return res
}

// TestAOFTurnedOffUnderLoadLosesNothing: CONFIG SET appendonly no while 16 goroutines publish,
// then Redis is killed with SIGKILL and restarted on its folder. Every publish that was
// acknowledged still resolves: each was written in a transaction whose reading of the server's
// persistence found AOF on and appendfsync always, so Redis fsynced it before answering (turning
// AOF off fsyncs what came before). Those whose reading found AOF off were refused, and the
// store turned volatile at once, without waiting for its next reading (CheckEvery, 10 s).
func TestAOFTurnedOffUnderLoadLosesNothing(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, t.TempDir())
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	s, err := newWith(t, r.Addr, redismap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := publishUnderLoad(t, s, 500*time.Millisecond, time.Second, func() {
		if err := admin.ConfigSet(ctx, "appendonly", "no").Err(); err != nil {
			t.Error(err)
		}
	})
	r.Kill()
	r.Restart(t)
	after, err := newWith(t, r.Addr, redismap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for in, pub := range res.acked {
		if got, err := after.Resolve(ctx, pub); err != nil || got != in {
			lost++
		}
	}
	t.Logf("AOF turned off under load, Redis killed: %d publishes acknowledged (%d sent after the change), %d refused, %d lost",
		len(res.acked), res.ackedLate, res.refused, lost)
	if lost != 0 {
		t.Errorf("%d of %d acknowledged mappings lost", lost, len(res.acked))
	}
	if len(res.acked) == 0 || res.refused == 0 {
		t.Fatalf("%d acknowledged, %d refused: the load did not span the change", len(res.acked), res.refused)
	}
	if res.ackedLate != 0 {
		t.Errorf("%d publishes sent after AOF was off were acknowledged", res.ackedLate)
	}
	if !res.volatile {
		t.Error("the store did not report itself volatile at its first refusal")
	}
}

// TestFsyncWeakenedUnderLoadAcknowledgesNothing: CONFIG SET appendfsync everysec while 16
// goroutines publish. Redis 7.0 has no WAITAOF, so a write under everysec is answered before its
// fsync: no publish sent after the change is acknowledged, the store turns volatile at its first
// refusal, and with AcceptVolatile publishes go on as before (nothing is read per write).
func TestFsyncWeakenedUnderLoadAcknowledgesNothing(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, t.TempDir())
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	set := func(value string) func() {
		return func() {
			if err := admin.ConfigSet(ctx, "appendfsync", value).Err(); err != nil {
				t.Error(err)
			}
		}
	}
	s, err := newWith(t, r.Addr, redismap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := publishUnderLoad(t, s, 300*time.Millisecond, 700*time.Millisecond, set("everysec"))
	t.Logf("appendfsync everysec under load: %d publishes acknowledged, %d sent after the change; %d refused",
		len(res.acked), res.ackedLate, res.refused)
	if len(res.acked) == 0 || res.refused == 0 {
		t.Fatalf("%d acknowledged, %d refused: the load did not span the change", len(res.acked), res.refused)
	}
	if res.ackedLate != 0 {
		t.Errorf("%d publishes sent after appendfsync everysec were acknowledged", res.ackedLate)
	}
	if !res.volatile {
		t.Error("the store did not report itself volatile at its first refusal")
	}
	set("always")()
	accepted, err := newWith(t, r.Addr, redismap.Options{AcceptVolatile: true})
	if err != nil {
		t.Fatal(err)
	}
	res = publishUnderLoad(t, accepted, 100*time.Millisecond, 300*time.Millisecond, set("everysec"))
	if res.refused != 0 || res.ackedLate == 0 {
		t.Errorf("with AcceptVolatile: %d refused, %d acknowledged after the change; want none refused", res.refused, res.ackedLate)
	}
}

// TestRefusedPublishIsNotAcknowledgedOnRetry: with AOF turned off, a publish runs its script
// (the mapping is written, in memory only) and is refused by the reading in its transaction, and
// the store turns volatile though it never reads the persistence by itself (CheckEvery -1). A
// retry of the same internal ID is refused too, through that store and through another that has
// not seen the change: the mapping would not survive a crash, and after a SIGKILL it is gone.
func TestRefusedPublishIsNotAcknowledgedOnRetry(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, t.TempDir())
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	maker, _ := publicid.NewMaker("ord")
	fresh := func() (string, error) { return maker.New("ord") }
	first, err := newWith(t, r.Addr, redismap.Options{CheckEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	other, err := newWith(t, r.Addr, redismap.Options{CheckEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Publish(ctx, 1, fresh); err != nil { // Redis learns the script
		t.Fatal(err)
	}
	if err := admin.ConfigSet(ctx, "appendonly", "no").Err(); err != nil {
		t.Fatal(err)
	}
	const in = 7
	refused := func(s *redismap.Store, what string) {
		t.Helper()
		if pub, err := s.Publish(ctx, in, fresh); !errors.Is(err, mapping.ErrVolatile) || !strings.Contains(err.Error(), "AOF off") {
			t.Fatalf("%s on a server with AOF off: %q, %v; want ErrVolatile saying AOF off", what, pub, err)
		}
		if v, why := s.Volatile(); !v || !strings.Contains(why, r.Addr+" has AOF off") {
			t.Fatalf("after %s: Volatile() = %v, %q", what, v, why)
		}
	}
	refused(first, "a publish")
	if n := admin.Exists(ctx, "pid:i:7").Val(); n != 1 {
		t.Fatalf("the refused publish left %d pid:i:7 keys; the test wants the script to have run", n)
	}
	refused(first, "the retry")
	refused(other, "a retry through another store")
	r.Kill()
	r.Restart(t)
	if n := admin.Exists(ctx, "pid:i:7").Val(); n != 0 {
		t.Fatalf("after a SIGKILL the refused mapping is still there (%d keys): the test shows nothing", n)
	}
}

// TestClusterRefusesAWriteOnAVolatileMaster: on Cluster each write of a publish (the public
// key's, the internal key's) runs in a transaction with a reading of its own master's
// persistence. With AOF turned off on one master of three, a publish whose keys live on the other
// two is acknowledged, and the first one that writes to the volatile master is refused and turns
// the store volatile, naming that master (CheckEvery -1: no reading of the store's own).
func TestClusterRefusesAWriteOnAVolatileMaster(t *testing.T) {
	ctx := context.Background()
	addrs := testenv.StartRedisCluster(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	s, err := redismap.New(ctx, rdb, redismap.Options{CheckEvery: -1})
	if err != nil {
		rdb.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	node := redis.NewClient(&redis.Options{Addr: addrs[2]})
	defer node.Close()
	if err := node.ConfigSet(ctx, "appendonly", "no").Err(); err != nil {
		t.Fatal(err)
	}
	maker, _ := publicid.NewMaker("ord")
	on := func(key string) string {
		c, err := rdb.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return c.Options().Addr
	}
	acked := 0
	for in := int64(1); ; in++ {
		var public string
		pub, err := s.Publish(ctx, in, func() (string, error) {
			p, err := maker.New("ord")
			public = p
			return p, err
		})
		if errors.Is(err, mapping.ErrVolatile) {
			if on("pid:i:"+strconv.FormatInt(in, 10)) != addrs[2] && on("pid:p:"+public) != addrs[2] {
				t.Fatalf("publish %d refused, but neither of its keys is on the volatile master: %v", in, err)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if on("pid:i:"+strconv.FormatInt(in, 10)) == addrs[2] || on("pid:p:"+pub) == addrs[2] {
			t.Fatalf("publish %d acknowledged with a key on %s, whose AOF is off", in, addrs[2])
		}
		acked++
		if in > 100 {
			t.Fatal("100 publishes and none wrote to the volatile master")
		}
	}
	if v, why := s.Volatile(); !v || !strings.Contains(why, addrs[2]+" has AOF off") || strings.Contains(why, addrs[0]) {
		t.Fatalf("Volatile() = %v, %q; want it to name %s alone", v, why, addrs[2])
	}
	t.Logf("%d publishes on the durable masters acknowledged before the first write to the volatile one was refused", acked)
}
