package redismap_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/redis/go-redis/v9"
)

// TestScan: Scan lists every mapping (on Cluster, every master's) exactly as stored, at most limit
// pairs a page, across pages of small and large limits and from a cursor a stopped scan left; it
// lists no token, secret or internal key, repairs a pending key and skips an orphan one.
func TestScan(t *testing.T) {
	topologies(t, func(t *testing.T, _ string, rdb redis.UniversalClient) {
		ctx := context.Background()
		s := newStore(t, rdb)
		maker, _ := publicid.NewMaker("ord")
		fresh := func() (string, error) { return maker.New("ord") }
		want := map[string]int64{}
		for in := int64(1); in <= 700; in++ {
			pub, err := s.Publish(ctx, in, fresh)
			if err != nil {
				t.Fatal(err)
			}
			want[pub] = in
		}
		if err := s.PutToken(ctx, "ord_token", []byte("v"), time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Secret(ctx, "scan", 16); err != nil {
			t.Fatal(err)
		}
		// A half-done create (repaired: listed) and an orphan (its internal ID has another public
		// ID: not listed).
		pending, _ := fresh()
		orphan, _ := fresh()
		rdb.Set(ctx, "pid:p:"+pending, "0:5000", 0)
		rdb.Set(ctx, "pid:p:"+orphan, "0:1", 0)
		want[pending] = 5000

		scan := func(t *testing.T, cursor string, limit, pages int) (map[string]int64, string) {
			t.Helper()
			seen := map[string]int64{}
			for n := 0; pages == 0 || n < pages; n++ {
				pairs, next, err := s.Scan(ctx, cursor, limit)
				if err != nil {
					t.Fatalf("Scan(%q, %d): %v", cursor, limit, err)
				}
				if len(pairs) > limit {
					t.Fatalf("Scan(%q, %d) gave %d pairs", cursor, limit, len(pairs))
				}
				for _, p := range pairs {
					seen[p.Public] = p.Internal
				}
				if cursor = next; cursor == "" {
					break
				}
				if n > 10_000 {
					t.Fatal("Scan does not end")
				}
			}
			return seen, cursor
		}
		for _, limit := range []int{1, 3, 100, 5000} {
			if seen, _ := scan(t, "", limit, 0); fmt.Sprint(seen) != fmt.Sprint(want) {
				t.Fatalf("Scan with limit %d listed %d pairs, want %d", limit, len(seen), len(want))
			}
		}
		first, cursor := scan(t, "", 50, 3)
		if cursor == "" {
			t.Fatal("a scan of 701 mappings ended after 3 pages of 50")
		}
		rest, _ := scan(t, cursor, 50, 0)
		for p, in := range rest {
			first[p] = in
		}
		if fmt.Sprint(first) != fmt.Sprint(want) {
			t.Fatalf("a scan resumed from its cursor listed %d pairs, want %d", len(first), len(want))
		}
		if n, _ := rdb.Exists(ctx, "pid:p:"+orphan).Result(); n != 0 {
			t.Error("Scan left the orphan key")
		}
		if _, _, err := s.Scan(ctx, "d1.bogus", 10); err == nil {
			t.Error("Scan of another driver's cursor: want an error")
		}
	})
}

// TestScanACL: a user granted ACL, ACLConfigRead and ACLScan can scan; one without ACLScan
// cannot.
func TestScanACL(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, t.TempDir())
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	user := func(name string, rules ...string) *redis.Client {
		args := []any{"ACL", "SETUSER", name, "on", ">pw"}
		for _, f := range strings.Fields(strings.Join(rules, " ")) {
			args = append(args, f)
		}
		if err := admin.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
		return redis.NewClient(&redis.Options{Addr: r.Addr, Username: name, Password: "pw"})
	}
	s := newStore(t, user("backfill", redismap.ACL, redismap.ACLConfigRead, redismap.ACLScan))
	pub, err := s.Publish(ctx, 9, func() (string, error) { return "ord_scanacl", nil })
	if err != nil {
		t.Fatal(err)
	}
	if pairs, next, err := s.Scan(ctx, "", 100); err != nil || len(pairs) != 1 || pairs[0].Public != pub || next != "" {
		t.Fatalf("Scan as the backfill's user = %v, %q, %v", pairs, next, err)
	}
	plain := newStore(t, user("service", redismap.ACL, redismap.ACLConfigRead))
	if _, _, err := plain.Scan(ctx, "", 100); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("Scan as a service's user: %v, want NOPERM", err)
	}
}
