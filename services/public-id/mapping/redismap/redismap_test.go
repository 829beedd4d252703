package redismap_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/mappingtest"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/redis/go-redis/v9"
)

func newStore(t testing.TB, rdb redis.UniversalClient) *redismap.Store {
	t.Helper()
	s, err := redismap.New(context.Background(), rdb, redismap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, redis.ErrClosed) { // some tests close the client themselves
			t.Error(err)
		}
	})
	return s
}

func TestConformanceStandalone(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	mappingtest.Run(t, func(t *testing.T) mapping.Store {
		return newStore(t, redis.NewClient(&redis.Options{Addr: r.Addr}))
	}, func(t *testing.T) mapping.Store {
		// A server of its own, stopped once the store is open: every call meets a closed port.
		down := testenv.StartRedis(t, t.TempDir())
		s := newStore(t, redis.NewClient(&redis.Options{Addr: down.Addr}))
		down.Stop()
		return s
	})
}

// TestConformanceACL: the whole contract holds for a user granted ACL and, on this Redis (7.0,
// no WAITAOF), ACLConfigRead alone, and that user cannot flush, list, reconfigure the server or
// manage users; a user granted ACL alone cannot read the server's settings (its passwords among
// them), and the store refuses to start for it as it refuses any server whose durability it
// cannot read.
func TestConformanceACL(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	ctx := context.Background()
	setUser := func(name string, rules ...string) func() *redis.Client {
		args := []any{"ACL", "SETUSER", name, "on", ">pw"}
		for _, r := range rules {
			for _, f := range strings.Fields(r) {
				args = append(args, f)
			}
		}
		if err := admin.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("ACL SETUSER %s: %v", name, err)
		}
		return func() *redis.Client {
			return redis.NewClient(&redis.Options{Addr: r.Addr, Username: name, Password: "pw"})
		}
	}
	user := setUser("publisher", redismap.ACL, redismap.ACLConfigRead)
	mappingtest.Run(t, func(t *testing.T) mapping.Store { return newStore(t, user()) }, func(t *testing.T) mapping.Store {
		down := testenv.StartRedis(t, t.TempDir())
		s := newStore(t, redis.NewClient(&redis.Options{Addr: down.Addr}))
		down.Stop()
		return s
	})
	c := user()
	defer c.Close()
	for _, cmd := range [][]any{{"FLUSHALL"}, {"KEYS", "*"}, {"CONFIG", "SET", "appendonly", "no"}, {"SET", "other:1", "x"}, {"ACL", "LIST"}} {
		if err := c.Do(ctx, cmd...).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("%v as the store's user: %v, want NOPERM", cmd, err)
		}
	}
	bare := setUser("bare", redismap.ACL)()
	defer bare.Close()
	if err := bare.Do(ctx, "CONFIG", "GET", "requirepass").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("CONFIG GET requirepass as a user granted ACL alone: %v, want NOPERM", err)
	}
	if _, err := redismap.New(ctx, bare, redismap.Options{}); err == nil || !strings.Contains(err.Error(), "volatile") {
		t.Errorf("the store for a user that cannot read its durability on 7.0: %v, want a refusal as volatile", err)
	}
}

func TestConformanceCluster(t *testing.T) {
	addrs := testenv.StartRedisCluster(t)
	mappingtest.Run(t, func(t *testing.T) mapping.Store {
		return newStore(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}))
	}, func(t *testing.T) mapping.Store {
		servers := testenv.StartRedisClusterServers(t)
		var down []string
		for _, r := range servers {
			down = append(down, r.Addr)
		}
		s := newStore(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: down}))
		for _, r := range servers {
			r.Stop()
		}
		return s
	})
}

// topologies runs f against a standalone server and a three-master cluster.
func topologies(t *testing.T, f func(t *testing.T, spec string, rdb redis.UniversalClient)) {
	t.Run("Standalone", func(t *testing.T) {
		r := testenv.StartRedis(t, t.TempDir())
		f(t, "standalone:"+r.Addr, redis.NewClient(&redis.Options{Addr: r.Addr}))
	})
	t.Run("Cluster", func(t *testing.T) {
		addrs := testenv.StartRedisCluster(t)
		f(t, "cluster:"+strings.Join(addrs, ","), redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}))
	})
}

// client opens the topology named by a spec from topologies.
func client(spec string) redis.UniversalClient {
	kind, addrs, _ := strings.Cut(spec, ":")
	if kind == "cluster" {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
	}
	return redis.NewClient(&redis.Options{Addr: addrs})
}

// On one server a publish is one atomic script: the public key is committed at once.
func TestStandalonePublishIsAtomic(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, t.TempDir())
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	s := newStore(t, rdb)
	maker, _ := publicid.NewMaker("ord")
	pub, err := s.Publish(ctx, 77, func() (string, error) { return maker.New("ord") })
	if err != nil {
		t.Fatal(err)
	}
	if v := rdb.Get(ctx, "pid:p:"+pub).Val(); v != "1:77" {
		t.Fatalf("public key after a standalone publish: %q, want committed 1:77", v)
	}
	if v := rdb.Get(ctx, "pid:i:77").Val(); v != pub {
		t.Fatalf("internal key: %q, want %s", v, pub)
	}
}

// A writer killed between its two writes (possible on Cluster, and with data written there) leaves
// a pending public key; the next reader repairs it: it becomes the canonical public ID, and
// publishing again returns it.
func TestHalfDoneCreateIsRepaired(t *testing.T) {
	topologies(t, halfDoneCreateIsRepaired)
}

func halfDoneCreateIsRepaired(t *testing.T, _ string, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newStore(t, rdb)
	maker, _ := publicid.NewMaker("ord")
	pub, _ := maker.New("ord")

	// What a killed writer leaves: step 1 done, steps 2 and 3 not.
	rdb.Set(ctx, "pid:p:"+pub, "0:42", 0)
	got, err := s.Resolve(ctx, pub)
	if err != nil || got != 42 {
		t.Fatalf("Resolve of a half-done create = %d, %v", got, err)
	}
	again, err := s.Publish(ctx, 42, func() (string, error) { return maker.New("ord") })
	if err != nil || again != pub {
		t.Fatalf("Publish after the repair = %s, %v; want %s", again, err, pub)
	}
	if v := rdb.Get(ctx, "pid:p:"+pub).Val(); v != "1:42" {
		t.Fatalf("public key after the repair: %q", v)
	}

	// A half-done create that lost: the internal ID got another public ID meanwhile.
	orphan, _ := maker.New("ord")
	rdb.Set(ctx, "pid:p:"+orphan, "0:42", 0)
	if _, err := s.Resolve(ctx, orphan); !errors.Is(err, mapping.ErrNotFound) {
		t.Fatalf("orphan resolves: %v", err)
	}
	if rdb.Exists(ctx, "pid:p:"+orphan).Val() != 0 {
		t.Fatal("the orphan was not cleaned up")
	}
}

// A real writer process is killed with SIGKILL at random points while publishing; afterwards
// every acknowledged mapping resolves, each internal ID has one public ID, and half-done creates
// (Cluster) are repaired by reading.
func TestWriterKilledMidCreate(t *testing.T) {
	if os.Getenv("IDGEN_PUBLISH_WRITER") != "" {
		writer()
		return
	}
	topologies(t, writerKilledMidCreate)
}

func writerKilledMidCreate(t *testing.T, spec string, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newStore(t, rdb)
	acked := map[int64]string{}
	for round := range 5 {
		var out testenv.LogBuffer
		p := proc.StartT(t, proc.Spec{Bin: os.Args[0], Name: "writer", Args: []string{"-test.run", "^TestWriterKilledMidCreate$"},
			Env: []string{"IDGEN_PUBLISH_WRITER=" + spec, fmt.Sprintf("IDGEN_PUBLISH_BASE=%d", round*1_000_000)}, Output: &out})
		// Once the writer acknowledges (a test binary under -race on a busy machine can take longer
		// to start than the kill's offset, and then a round checked nothing), a kill at a point
		// that differs by round.
		testenv.Eventually(t, 30*time.Second, func() (bool, string) {
			return strings.Contains(out.String(), " ord_"), "the writer acknowledged nothing:\n" + out.String()
		})
		time.Sleep(time.Duration(100+round*37) * time.Millisecond)
		_ = p.Kill()
		var in int64
		var pub string
		for _, line := range splitLines(out.String()) {
			if n, _ := fmt.Sscanf(line, "%d %s", &in, &pub); n == 2 {
				acked[in] = pub
			}
		}
	}
	lost := 0
	for in, pub := range acked {
		got, err := s.Resolve(ctx, pub)
		if err != nil || got != in {
			lost++
			continue
		}
		again, err := s.Publish(ctx, in, func() (string, error) { return "ord_unused", nil })
		if err != nil || again != pub {
			t.Fatalf("internal %d: publish after the kills = %s, %v; acknowledged %s", in, again, err, pub)
		}
	}
	t.Logf("writer killed 5 times: %d acknowledged mappings checked, %d lost", len(acked), lost)
	if lost > 0 || len(acked) == 0 {
		t.Fatalf("%d of %d acknowledged mappings lost", lost, len(acked))
	}
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		if i < len(s) {
			out = append(out, s[:i])
			s = s[i+1:]
		} else {
			break // a line cut by the kill: not acknowledged
		}
	}
	return out
}

// writer publishes sequential internal IDs forever, printing each acknowledged mapping.
func writer() {
	ctx := context.Background()
	s, err := redismap.New(ctx, client(os.Getenv("IDGEN_PUBLISH_WRITER")), redismap.Options{})
	if err != nil {
		panic(err)
	}
	base, _ := strconv.ParseInt(os.Getenv("IDGEN_PUBLISH_BASE"), 10, 64)
	maker, _ := publicid.NewMaker("ord")
	for i := base; ; i++ {
		pub, err := s.Publish(ctx, i, func() (string, error) { return maker.New("ord") })
		if err != nil {
			continue
		}
		fmt.Printf("%d %s\n", i, pub)
	}
}

// Redis is killed with SIGKILL right after acknowledged publishes and restarted from its AOF:
// every acknowledged mapping still resolves (appendfsync always).
func TestRedisKilledLosesNothing(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, t.TempDir())
	maker, _ := publicid.NewMaker("ord")
	acked := map[int64]string{}
	for round := range 5 {
		rdb := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
		s := newStore(t, rdb)
		for i := range int64(300) {
			in := int64(round)*1_000_000 + i
			pub, err := s.Publish(ctx, in, func() (string, error) { return maker.New("ord") })
			if err != nil {
				t.Fatal(err)
			}
			acked[in] = pub
		}
		r.Kill()
		rdb.Close()
		r.Restart(t)
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	s := newStore(t, rdb)
	lost := 0
	for in, pub := range acked {
		if got, err := s.Resolve(ctx, pub); err != nil || got != in {
			lost++
		}
	}
	t.Logf("redis killed 5 times right after acknowledged publishes: %d mappings checked, %d lost", len(acked), lost)
	if lost != 0 {
		t.Fatalf("%d acknowledged mappings lost", lost)
	}
}

// BenchmarkPublish: durable publishes (appendfsync always) from 16 goroutines, next to plain SETs
// of the same size from 16 goroutines on the same server: compare the two ns/op. The Uncovered
// cases publish on a second store as one that reads nothing per write does (AcceptVolatile, or
// this package before each write carried a reading of the persistence on servers without
// WAITAOF); with -count, the cases alternate, so each pair's ratio comes from the same run.
//
//	cd services/public-id && go test -run '^$' -bench Publish -count 3 ./mapping/redismap
func BenchmarkPublish(b *testing.B) {
	ctx := context.Background()
	r := testenv.StartRedis(b, b.TempDir())
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: 32})
	s := newStore(b, rdb)
	uncovered := newStore(b, redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: 32}))
	redismap.Uncovered(uncovered)
	maker, _ := publicid.NewMaker("ord")
	var next, ids atomic.Int64 // SET keys; internal IDs published
	b.Run("SET", func(b *testing.B) {
		b.SetParallelism(8) // 16 goroutines on 2 cores
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := rdb.Set(ctx, "bench:"+strconv.FormatInt(next.Add(1), 10), "ord_0123456789abcdefghijk", 0).Err(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	publish := func(s *redismap.Store) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Publish(ctx, ids.Add(1), func() (string, error) { return maker.New("ord") }); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
	}
	b.Run("Publish", publish(s))
	b.Run("PublishUncovered", publish(uncovered))
	// IDs that already have public IDs (those published above): Publish still makes a candidate
	// (sqids) for the script, which Lookup does not.
	published := ids.Load()
	var again atomic.Int64
	existing := func(s *redismap.Store) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Publish(ctx, 1+again.Add(1)%published, func() (string, error) { return maker.New("ord") }); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
	}
	b.Run("PublishExisting", existing(s))
	b.Run("PublishExistingUncovered", existing(uncovered))
	b.Run("LookupExisting", func(b *testing.B) {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.Lookup(ctx, 1+again.Add(1)%published); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
