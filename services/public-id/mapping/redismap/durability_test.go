package redismap_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/redis/go-redis/v9"
)

// newWith runs New on a fresh client for addr.
func newWith(t *testing.T, addr string, o redismap.Options) (*redismap.Store, error) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	s, err := redismap.New(context.Background(), rdb, o)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	t.Cleanup(func() { s.Close() })
	return s, nil
}

// refusedThenAccepted: New refuses the server at addr with an error saying each of want and the
// way out; with AcceptVolatile it opens a store that reports itself volatile, for the same reason.
func refusedThenAccepted(t *testing.T, addr string, want ...string) {
	t.Helper()
	if _, err := newWith(t, addr, redismap.Options{}); err == nil {
		t.Fatal("a volatile store was accepted")
	} else {
		for _, w := range append(want, addr, "--accept-volatile-store") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("refusal %q does not say %q", err, w)
			}
		}
		t.Logf("refused: %v", err)
	}
	s, err := newWith(t, addr, redismap.Options{AcceptVolatile: true})
	if err != nil {
		t.Fatalf("with AcceptVolatile: %v", err)
	}
	volatile, why := s.Volatile()
	if !volatile {
		t.Fatal("Volatile() = false on an accepted volatile store")
	}
	for _, w := range append(want, addr) {
		if !strings.Contains(why, w) {
			t.Errorf("Volatile() reason %q does not say %q", why, w)
		}
	}
	if strings.Contains(why, "--accept-volatile-store") {
		t.Errorf("Volatile() reason %q suggests the flag that is already set", why)
	}
}

// TestRefusesAOFOff: with appendonly no, Redis acknowledges writes it holds only in memory.
func TestRefusesAOFOff(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir(), "--appendonly", "no")
	refusedThenAccepted(t, r.Addr, "AOF off (aof_enabled:0)", "appendonly yes")
}

// TestRefusesEverysecWithoutWAITAOF: this machine's Redis (7.0) has no WAITAOF, so under
// appendfsync everysec an acknowledged write may not be on disk yet.
func TestRefusesEverysecWithoutWAITAOF(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir(), "--appendfsync", "everysec")
	refusedThenAccepted(t, r.Addr, "appendfsync everysec", "7.2", "appendfsync always")
}

// TestRefusesUnverifiableFsync: CONFIG renamed away, as managed services do; without WAITAOF
// (7.0 here) nothing confirms that acknowledged writes are fsynced.
func TestRefusesUnverifiableFsync(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir(), "--rename-command", "CONFIG", "")
	refusedThenAccepted(t, r.Addr, "CONFIG GET appendfsync", "unknown command", "cannot be verified", "7.2")
}

// TestAcceptsDurable: appendonly yes and appendfsync always (testenv's default) is durable.
func TestAcceptsDurable(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	for _, accept := range []bool{false, true} {
		s, err := newWith(t, r.Addr, redismap.Options{AcceptVolatile: accept})
		if err != nil {
			t.Fatal(err)
		}
		if volatile, why := s.Volatile(); volatile || why != "" {
			t.Fatalf("AcceptVolatile %v: Volatile() = %v, %q on a durable server", accept, volatile, why)
		}
	}
}

// TestClusterRefusesAVolatileMaster: every master takes writes, so each is checked; two of three
// are made volatile at run time, one each way, and both are named.
func TestClusterRefusesAVolatileMaster(t *testing.T) {
	ctx := context.Background()
	addrs := testenv.StartRedisCluster(t)
	open := func(o redismap.Options) (*redismap.Store, error) {
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		s, err := redismap.New(ctx, rdb, o)
		if err != nil {
			rdb.Close()
			return nil, err
		}
		t.Cleanup(func() { s.Close() })
		return s, nil
	}
	if _, err := open(redismap.Options{}); err != nil {
		t.Fatalf("a durable cluster: %v", err)
	}
	set := func(addr, param, value string) {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		if err := c.ConfigSet(ctx, param, value).Err(); err != nil {
			t.Fatal(err)
		}
	}
	set(addrs[1], "appendonly", "no")
	set(addrs[2], "appendfsync", "everysec")
	want := []string{addrs[1] + " has AOF off (aof_enabled:0)", addrs[2] + " has appendfsync everysec"}
	_, err := open(redismap.Options{})
	if err == nil {
		t.Fatal("a cluster with volatile masters was accepted")
	}
	for _, w := range append(want, "--accept-volatile-store") {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), addrs[0]) {
		t.Errorf("refusal %q names the durable master %s", err, addrs[0])
	}
	s, err := open(redismap.Options{AcceptVolatile: true})
	if err != nil {
		t.Fatal(err)
	}
	volatile, why := s.Volatile()
	for _, w := range want {
		if !volatile || !strings.Contains(why, w) {
			t.Errorf("Volatile() = %v, %q: does not say %q", volatile, why, w)
		}
	}
}

// TestVolatileStoreLosesAcknowledgedMappings is why New refuses a volatile store: Redis is killed
// with SIGKILL right after acknowledged publishes and restarted on its data folder. Under
// appendonly no (accepted with AcceptVolatile) every mapping is gone; under the default
// (appendonly yes, appendfsync always) every one resolves.
func TestVolatileStoreLosesAcknowledgedMappings(t *testing.T) {
	const n = 200
	run := func(t *testing.T, extra ...string) (lost int) {
		ctx := context.Background()
		r := testenv.StartRedis(t, t.TempDir(), extra...)
		s, err := newWith(t, r.Addr, redismap.Options{AcceptVolatile: true})
		if err != nil {
			t.Fatal(err)
		}
		maker, _ := publicid.NewMaker("ord")
		acked := map[int64]string{}
		for in := range int64(n) {
			pub, err := s.Publish(ctx, in, func() (string, error) { return maker.New("ord") })
			if err != nil {
				t.Fatal(err)
			}
			acked[in] = pub
		}
		r.Kill()
		r.Restart(t)
		s, err = newWith(t, r.Addr, redismap.Options{AcceptVolatile: true})
		if err != nil {
			t.Fatal(err)
		}
		for in, pub := range acked {
			if got, err := s.Resolve(ctx, pub); err != nil || got != in {
				lost++
			}
		}
		t.Logf("redis killed after %d acknowledged publishes: %d lost", n, lost)
		return lost
	}
	t.Run("appendonly no", func(t *testing.T) {
		if lost := run(t, "--appendonly", "no"); lost != n {
			t.Fatalf("%d of %d lost; a volatile store was expected to lose them all", lost, n)
		}
	})
	t.Run("durable", func(t *testing.T) {
		if lost := run(t); lost != 0 {
			t.Fatalf("%d of %d lost", lost, n)
		}
	})
}

// TestJudge covers the decisions a 7.0 server cannot show: where WAITAOF (7.2+) follows each
// acknowledged write, everysec and an unreadable fsync policy are enough.
func TestJudge(t *testing.T) {
	refused := errors.New("ERR unknown command 'CONFIG'")
	cases := []struct {
		aof     string
		waitAOF bool
		fsync   string
		err     error
		want    string // "" for durable
		aofOff  bool
	}{
		{"0", true, "", nil, "AOF off (aof_enabled:0)", true},
		{"0", false, "", nil, "AOF off (aof_enabled:0)", true},
		{"", true, "always", nil, "does not report aof_enabled", false},
		{"1", false, "always", nil, "", false},
		{"1", true, "always", nil, "", false},
		{"1", false, "everysec", nil, "appendfsync everysec", false},
		{"1", true, "everysec", nil, "", false},
		{"1", false, "no", nil, "appendfsync no", false},
		{"1", true, "no", nil, "appendfsync no", false},
		{"1", false, "", refused, "cannot be verified", false},
		{"1", true, "", refused, "", false},
		{"1", false, "", nil, "did not answer", false},
		{"1", true, "", nil, "", false},
	}
	for _, c := range cases {
		why, aofOff := redismap.Judge("10.0.0.1:6379", c.aof, c.waitAOF, c.fsync, c.err)
		if aofOff != c.aofOff || (c.want == "") != (why == "") || !strings.Contains(why, c.want) {
			t.Errorf("aof_enabled %q, WAITAOF %v, appendfsync %q, CONFIG error %v: %q, AOF off %v; want %q, %v",
				c.aof, c.waitAOF, c.fsync, c.err, why, aofOff, c.want, c.aofOff)
		}
		if why != "" && !strings.Contains(why, "10.0.0.1:6379") {
			t.Errorf("%q does not name the node", why)
		}
	}
}

// TestWatchesDurability: the store re-reads its server's persistence while it runs. A durable
// server made volatile with CONFIG SET (AOF off, then an fsync policy that loses acknowledged
// writes) is seen within the interval: a publish that would make a mapping fails with
// mapping.ErrVolatile (not ErrUnavailable) and writes nothing, and so does a publish of an
// internal ID that has its public ID already (a publish refused on a volatile node may have
// written it), while resolves and lookups answer as before, and tokens are still kept; made
// durable again,
// publishes work again. With AcceptVolatile the same server is reported volatile and publishes
// go on; with a negative CheckEvery only New's reading counts.
func TestWatchesDurability(t *testing.T) {
	ctx := context.Background()
	const every = 100 * time.Millisecond
	maker, _ := publicid.NewMaker("ord")
	fresh := func() (string, error) { return maker.New("ord") }
	r := testenv.StartRedis(t, t.TempDir())
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	set := func(t *testing.T, param, value string) {
		t.Helper()
		if err := admin.ConfigSet(ctx, param, value).Err(); err != nil {
			t.Fatal(err)
		}
	}
	volatileWithin := func(t *testing.T, s *redismap.Store, want bool, reason string) {
		t.Helper()
		testenv.Eventually(t, 20*every, func() (bool, string) {
			v, why := s.Volatile()
			return v == want && strings.Contains(why, reason), fmt.Sprintf("Volatile() = %v, %q; want %v, %q", v, why, want, reason)
		})
	}

	s, err := newWith(t, r.Addr, redismap.Options{CheckEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	accepted, err := newWith(t, r.Addr, redismap.Options{CheckEvery: every, AcceptVolatile: true})
	if err != nil {
		t.Fatal(err)
	}
	once, err := newWith(t, r.Addr, redismap.Options{CheckEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.Publish(ctx, 1, fresh)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ param, value, reason string }{
		{"appendonly", "no", "AOF off (aof_enabled:0)"},
		{"appendfsync", "everysec", "appendfsync everysec"},
	} {
		t.Run(c.param+" "+c.value, func(t *testing.T) {
			set(t, c.param, c.value)
			volatileWithin(t, s, true, c.reason)
			volatileWithin(t, accepted, true, c.reason)
			keys := admin.DBSize(ctx).Val()
			_, err := s.Publish(ctx, 2, fresh)
			if !errors.Is(err, mapping.ErrVolatile) || errors.Is(err, mapping.ErrUnavailable) || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("a new mapping on a store turned volatile: %v, want ErrVolatile saying %q", err, c.reason)
			}
			if n := admin.DBSize(ctx).Val(); n != keys {
				t.Fatalf("the refused publish wrote: %d keys, %d before", n, keys)
			}
			if pub, err := s.Publish(ctx, 1, fresh); !errors.Is(err, mapping.ErrVolatile) || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("publish of an internal ID mapped before, on a volatile store: %q, %v; want ErrVolatile saying %q", pub, err, c.reason)
			}
			if in, err := s.Resolve(ctx, before); err != nil || in != 1 {
				t.Fatalf("resolve on a volatile store: %d, %v", in, err)
			}
			if pub, err := s.Lookup(ctx, 1); err != nil || pub != before {
				t.Fatalf("lookup on a volatile store: %q, %v", pub, err)
			}
			// A token is not a mapping (a lost one costs a listing's restart): still kept.
			if err := s.PutToken(ctx, "tok_"+c.param, []byte(c.value), time.Minute); err != nil {
				t.Fatalf("a token on a volatile store: %v", err)
			}
			if v, err := s.GetToken(ctx, "tok_"+c.param); err != nil || string(v) != c.value {
				t.Fatalf("the token put on a volatile store: %q, %v", v, err)
			}
			if _, err := accepted.Publish(ctx, 1000+int64(len(c.param)), fresh); err != nil {
				t.Fatalf("publish with AcceptVolatile: %v", err)
			}
			if v, _ := once.Volatile(); v {
				t.Fatal("a store with a negative CheckEvery read the persistence again")
			}
			if c.param == "appendonly" {
				set(t, "appendonly", "yes")
			} else {
				set(t, "appendfsync", "always")
			}
			volatileWithin(t, s, false, "")
			volatileWithin(t, accepted, false, "")
			pub, err := s.Publish(ctx, 2, fresh)
			if err != nil {
				t.Fatalf("publish once durable again: %v", err)
			}
			if in, err := s.Resolve(ctx, pub); err != nil || in != 2 {
				t.Fatalf("resolve of the publish made durable again: %d, %v", in, err)
			}
			if err := admin.Del(ctx, "pid:i:2", "pid:p:"+pub).Err(); err != nil { // for the next case
				t.Fatal(err)
			}
		})
	}
}

// TestClusterWatchesEveryMaster: one master of three made volatile while the store runs is seen
// and named, and publishes are refused until it is durable again.
func TestClusterWatchesEveryMaster(t *testing.T) {
	ctx := context.Background()
	addrs := testenv.StartRedisCluster(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	s, err := redismap.New(ctx, rdb, redismap.Options{CheckEvery: 100 * time.Millisecond})
	if err != nil {
		rdb.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	maker, _ := publicid.NewMaker("ord")
	fresh := func() (string, error) { return maker.New("ord") }
	node := redis.NewClient(&redis.Options{Addr: addrs[2]})
	defer node.Close()
	if err := node.ConfigSet(ctx, "appendonly", "no").Err(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		v, why := s.Volatile()
		return v && strings.Contains(why, addrs[2]+" has AOF off") && !strings.Contains(why, addrs[0]), fmt.Sprintf("Volatile() = %v, %q", v, why)
	})
	if _, err := s.Publish(ctx, 7, fresh); !errors.Is(err, mapping.ErrVolatile) {
		t.Fatalf("publish on a cluster with a volatile master: %v", err)
	}
	if err := node.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		v, why := s.Volatile()
		return !v, fmt.Sprintf("still volatile: %q", why)
	})
	if _, err := s.Publish(ctx, 7, fresh); err != nil {
		t.Fatal(err)
	}
}
