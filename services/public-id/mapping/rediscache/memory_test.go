package rediscache_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping/rediscache"
)

// usedMemory reads INFO memory's used_memory.
func usedMemory(t *testing.T, info string) int64 {
	t.Helper()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no used_memory in %q", info)
	return 0
}

// TestMemoryPerMapping measures what a cached mapping costs a real Redis (7.0, jemalloc), for the
// figures docs/public-ids.md gives: MEMORY USAGE of its two keys (about 240 bytes: their dict
// entries, objects and strings), and used_memory's growth per mapping over 32,768 of them (about
// 370 bytes: the expiry entries and both hash tables too). Public IDs are publicid's (ord_
// and 128 random bits in sqids), internal IDs 19 digits. The Redis keeps no AOF, as a cache's need not.
func TestMemoryPerMapping(t *testing.T) {
	documented := map[string]float64{"MEMORY USAGE": 240, "used_memory": 370}
	r := testenv.StartRedis(t, t.TempDir(), "--appendonly", "no")
	rc := client(t, r)
	c := open(t, url(r), sqliteStore(t), rediscache.Options{Timeout: time.Second})
	fresh := maker(t)
	const n = 1 << 15
	before, err := rc.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	pubs := make([]string, n)
	for i := range n {
		if pubs[i], err = fresh(); err != nil {
			t.Fatal(err)
		}
		rediscache.Keep(c, pubs[i], 1<<60+int64(i))
		if i%200 == 199 {
			rediscache.Wait(c)
		}
	}
	rediscache.Wait(c)
	after, err := rc.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	if keys, err := rc.DBSize(ctx).Result(); err != nil || keys != 2*n {
		t.Fatalf("%d keys (%v), want %d", keys, err, 2*n)
	}
	var usage, chars int64
	for _, p := range pubs {
		chars += int64(len(p))
	}
	const sample = 1000
	for i := range sample {
		p, err := rc.MemoryUsage(ctx, "c:p:"+pubs[i]).Result()
		if err != nil {
			t.Fatal(err)
		}
		q, err := rc.MemoryUsage(ctx, "c:i:"+strconv.FormatInt(1<<60+int64(i), 10)).Result()
		if err != nil {
			t.Fatal(err)
		}
		usage += p + q
	}
	perUsage := float64(usage) / sample
	perUsed := float64(usedMemory(t, after)-usedMemory(t, before)) / n
	t.Logf("a cached mapping (public IDs of %.1f bytes on average): MEMORY USAGE of its two keys %.0f bytes; used_memory %.0f bytes a mapping over %d",
		float64(chars)/n, perUsage, perUsed, n)
	for what, got := range map[string]float64{"MEMORY USAGE": perUsage, "used_memory": perUsed} {
		if doc := documented[what]; got < doc*0.8 || got > doc*1.25 {
			t.Errorf("%s: %.0f bytes a mapping, far from the documented %.0f", what, got, doc)
		}
	}
}
