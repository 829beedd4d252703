package redismap

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/redis/go-redis/v9"
)

// backgroundRunning reports whether a goroutine started by Store.background is still there
// after a moment: Close returns once every task has finished, and a finished task's goroutine
// is gone a few scheduler turns later.
func backgroundRunning() bool {
	buf := make([]byte, 1<<20)
	for range 100 {
		if !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "redismap.(*Store).background") {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// TestCloseStopsBackground: a background task runs until the store's lifetime ends; Close ends
// it, waits for it, and leaves no goroutine behind; nothing starts after Close.
func TestCloseStopsBackground(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	s, err := New(context.Background(), redis.NewClient(&redis.Options{Addr: r.Addr}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	s.background(func(life context.Context) {
		close(started)
		<-life.Done() // as a commit to a frozen server would wait
	})
	<-started
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(commitTimeout):
		t.Fatal("Close did not return: the background task outlives the store")
	}
	if backgroundRunning() {
		t.Fatal("a background goroutine is left after Close")
	}
	ran := false
	s.background(func(context.Context) { ran = true })
	if ran || backgroundRunning() {
		t.Fatal("a background task started after Close")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestClusterPublishThenClose: the Cluster publish commits in the background; Close right after
// a burst of publishes returns with none of those commits left running.
func TestClusterPublishThenClose(t *testing.T) {
	addrs := testenv.StartRedisCluster(t)
	s, err := New(context.Background(), redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	maker, err := publicid.NewMaker("ord")
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(50) {
		if _, err := s.Publish(context.Background(), 5_000_000+i, func() (string, error) { return maker.New("ord") }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if backgroundRunning() {
		t.Fatal("a background commit is left after Close")
	}
}
