package regions

import (
	"fmt"
	"testing"
	"time"
)

// TestNegativeCacheForgetsTheOldest: a full negative cache forgets its oldest entry for each new
// one (a prober's unknown IDs cost no sweep of every entry under the lock every resolve takes),
// and an expired entry is not an answer.
func TestNegativeCacheForgetsTheOldest(t *testing.T) {
	now := time.Unix(1000, 0)
	c := negCache{ttl: 10 * time.Second, max: 3, m: map[string]time.Time{}, now: func() time.Time { return now }}
	for _, id := range []string{"a", "b", "c", "d"} {
		c.add(id)
	}
	if c.has("a") || !c.has("b") || !c.has("d") || c.len() != 3 {
		t.Fatalf("after a, b, c, d in a cache of 3: a %v, b %v, d %v, %d entries", c.has("a"), c.has("b"), c.has("d"), c.len())
	}
	now = now.Add(11 * time.Second)
	if c.has("d") {
		t.Fatal("an entry past its TTL is still an answer")
	}
}

// BenchmarkNegativeCacheAddFull: the cost of one more unknown ID in a full cache (100,000
// entries, none expired): go test ./services/public-id/mapping/regions -run '^$' -bench NegativeCache
func BenchmarkNegativeCacheAddFull(b *testing.B) {
	c := negCache{ttl: time.Hour, max: 100_000, m: map[string]time.Time{}, now: time.Now}
	for i := range c.max {
		c.add(fmt.Sprintf("ord_probe%022d", i))
	}
	i := 0
	for b.Loop() {
		c.add(fmt.Sprintf("ord_more%023d", i))
		i++
	}
}
