package redismap_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/redis/go-redis/v9"
)

// TestOpenTLSAndPassword: a server that wants TLS and a password, as managed Redis services do.
func TestOpenTLSAndPassword(t *testing.T) {
	const password = "s3cret-Pa55"
	r := testenv.StartRedisTLS(t, t.TempDir(), "--requirepass", password)
	ctx := context.Background()
	maker, err := publicid.NewMaker("ord")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("rediss with the CA and the password", func(t *testing.T) {
		s, err := redismap.Open(ctx, redismap.Target{Addr: "rediss://:" + password + "@" + r.TLSAddr, CAFile: r.CAFile}, redismap.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		pub, err := s.Publish(ctx, 683244571854022659, func() (string, error) { return maker.New("ord") })
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Resolve(ctx, pub); err != nil || got != 683244571854022659 {
			t.Fatalf("Resolve(%s) = %d, %v", pub, got, err)
		}
	})
	t.Run("plain redis URL with the password", func(t *testing.T) {
		s, err := redismap.Open(ctx, redismap.Target{Addr: "redis://:" + password + "@" + r.Addr + "/0"}, redismap.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if got, err := s.Lookup(ctx, 683244571854022659); err != nil || !strings.HasPrefix(got, "ord_") {
			t.Fatalf("Lookup over the plain port = %q, %v", got, err)
		}
	})

	refused := []struct {
		name   string
		target redismap.Target
		opts   redismap.Options
		want   string
	}{
		{"wrong password", redismap.Target{Addr: "rediss://:wrong-" + password + "@" + r.TLSAddr, CAFile: r.CAFile}, redismap.Options{}, "WRONGPASS"},
		{"no password", redismap.Target{Addr: r.Addr}, redismap.Options{}, "NOAUTH"},
		{"server certificate from an unknown CA", redismap.Target{Addr: "rediss://:" + password + "@" + r.TLSAddr}, redismap.Options{}, "certificate"},
		{"plaintext client on the TLS port", redismap.Target{Addr: "redis://:" + password + "@" + r.TLSAddr}, redismap.Options{}, "unavailable"},
		{"a CA file without TLS", redismap.Target{Addr: "redis://:" + password + "@" + r.Addr, CAFile: r.CAFile}, redismap.Options{}, "rediss://"},
		{"a CA file that does not exist", redismap.Target{Addr: "rediss://" + r.TLSAddr, CAFile: filepath.Join(t.TempDir(), "none.pem")}, redismap.Options{}, "CA file"},
		{"an unknown URL option", redismap.Target{Addr: "rediss://:" + password + "@" + r.TLSAddr + "?colour=blue"}, redismap.Options{}, "colour"},
		{"a malformed URL", redismap.Target{Addr: "rediss://:" + password + "@" + r.TLSAddr + "/x%zz"}, redismap.Options{}, "URL"},
		// This machine's Redis is 7.0: WAITAOF (7.2+) is missing, so replicas cannot be waited for.
		{"replicas without WAITAOF", redismap.Target{Addr: "rediss://:" + password + "@" + r.TLSAddr, CAFile: r.CAFile}, redismap.Options{WaitReplicas: 1}, "7.2"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			s, err := redismap.Open(ctx, c.target, c.opts)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
			if strings.Contains(err.Error(), password) {
				t.Fatalf("error %q repeats the password", err)
			}
		})
	}
}

// TestWaitAOFFollowsEachWrite: this machine's Redis (7.0) lacks WAITAOF, so a store made to send
// it must refuse every publish, and the error must be the server's answer to WAITAOF itself: the
// write and its WAITAOF went to the node that holds the key (on a cluster, a wrong node would
// answer MOVED first). A publish whose durability cannot be confirmed is never acknowledged.
func TestWaitAOFFollowsEachWrite(t *testing.T) {
	maker, err := publicid.NewMaker("ord")
	if err != nil {
		t.Fatal(err)
	}
	topologies(t, func(t *testing.T, _ string, rdb redis.UniversalClient) {
		s := newStore(t, rdb)
		redismap.ForceWaitAOF(s)
		for i := range int64(20) {
			pub, err := s.Publish(context.Background(), 1000+i, func() (string, error) { return maker.New("ord") })
			if err == nil {
				t.Fatalf("publish acknowledged (%s) without a durability answer", pub)
			}
			if !errors.Is(err, mapping.ErrUnavailable) || !strings.Contains(strings.ToLower(err.Error()), "unknown command") || strings.Contains(err.Error(), "MOVED") || strings.Count(err.Error(), "unavailable") != 1 {
				t.Fatalf("publish %d: %v", i, err)
			}
		}
	})
}
