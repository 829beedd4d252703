package redismap_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/redis/go-redis/v9"
)

// TestBytesPerMapping measures what one mapping costs in a Redis server's memory: MEMORY USAGE of
// the two keys a publish leaves (pid:p:<public> and pid:i:<internal>), for 28-character public
// IDs and 19-digit internal IDs. docs/public-ids.md ("What the store costs") prices Redis-only
// storage from this figure, so the band here is the one the document states.
func TestBytesPerMapping(t *testing.T) {
	const (
		n    = 2000
		low  = 210 // bytes per mapping, MEMORY USAGE of both keys
		high = 240
	)
	ctx := context.Background()
	r := testenv.StartRedis(t, t.TempDir())
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	s := newStore(t, redis.NewClient(&redis.Options{Addr: r.Addr}))
	maker, err := publicid.NewMaker("ord")
	if err != nil {
		t.Fatal(err)
	}
	before, err := usedMemory(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	var total, pubLen int64
	for i := range int64(n) {
		internal := int64(7_300_000_000_000_000_000) + i*1_000_003 // 19 digits, as the generator's IDs are
		pub, err := s.Publish(ctx, internal, func() (string, error) { return maker.New("ord") })
		if err != nil {
			t.Fatal(err)
		}
		pubLen += int64(len(pub))
		for _, key := range []string{"pid:p:" + pub, "pid:i:" + strconv.FormatInt(internal, 10)} {
			b, err := rdb.MemoryUsage(ctx, key, 0).Result()
			if err != nil {
				t.Fatalf("MEMORY USAGE %s: %v", key, err)
			}
			total += b
		}
	}
	if keys, err := rdb.DBSize(ctx).Result(); err != nil || keys != 2*n {
		t.Fatalf("the server holds %d keys (%v), want %d: a mapping is two keys", keys, err, 2*n)
	}
	after, err := usedMemory(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	per := float64(total) / n
	t.Logf("%d mappings, public IDs of %.1f characters: MEMORY USAGE %.1f bytes per mapping; used_memory grew %.1f bytes per mapping",
		n, float64(pubLen)/n, per, float64(after-before)/n)
	if per < low || per > high {
		t.Fatalf("MEMORY USAGE is %.1f bytes per mapping, outside [%d, %d]: update docs/public-ids.md and this band", per, low, high)
	}
}

// usedMemory is INFO memory's used_memory: every allocation of the server, the keyspace's hash
// table among them.
func usedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO memory has no used_memory: %q", info)
}
