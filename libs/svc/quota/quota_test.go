package quota_test

import (
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/svc/quota"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestTakeCountsIDs(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	l := quota.New(c.now)
	if ok, _ := l.Take("a", 100, 1000, 1000); !ok {
		t.Fatal("a full burst refused")
	}
	ok, wait := l.Take("a", 100, 1000, 1)
	if ok || wait <= 0 || wait > 20*time.Millisecond {
		t.Fatalf("after the burst: %v, wait %v (want about 10 ms)", ok, wait)
	}
	if ok, _ := l.Take("b", 100, 1000, 500); !ok {
		t.Fatal("another caller was affected")
	}
	c.add(time.Second)
	if ok, _ := l.Take("a", 100, 1000, 100); !ok {
		t.Fatal("a second's worth refused after a second")
	}
	if ok, wait := l.Take("a", 100, 1000, 2000); ok || wait < 20*time.Second {
		t.Fatalf("more than the burst: %v %v", ok, wait)
	}
	if ok, _ := l.Take("free", 0, 0, 1_000_000); !ok {
		t.Fatal("a caller without quota was limited")
	}
	if s := quota.RetryAfterSeconds(10 * time.Millisecond); s != 1 {
		t.Fatalf("Retry-After %d", s)
	}
}
