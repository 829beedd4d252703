package idclient

import (
	"context"
	"sync"
	"testing"

	"github.com/idgen/idgen/libs/idcore"
)

// benchBatch is one refill's IDs; every case below is fed this batch again and again, so that
// what a case costs per ID does not depend on b.N (callgrind's count of 2200 rounds minus 200,
// over 2000, is then the cost of an ID).
var benchBatch = func() []int64 {
	b := make([]int64, 1000)
	for i := range b {
		b[i] = int64(i + 1)
	}
	return b
}()

// BenchmarkNext is Next from the buffer, one batch put into it (as a refill does) for every 1,000
// IDs taken, against the same IDs handed out in the same run through a buffered channel, through
// a slice under a mutex (the buffer before batches: a lock per ID, taken from the front, refills
// appended) and from a slice with no synchronization at all (the floor). No refill loop runs: the
// client's kicks go to a wake channel nobody reads.
func BenchmarkNext(b *testing.B) {
	ctx := context.Background()
	b.Run("buffer", func(b *testing.B) {
		c := &Client{cfg: Config{Batch: 1000, LowWater: 4000, MaxLowWater: 4000}, mark: 4000, filled: make(chan struct{}), dry: make(chan struct{}),
			wake: make(chan struct{}, 1), stop: make(chan struct{}), inflight: map[*call]struct{}{}}
		c.cur.Store(used())
		for range 4 {
			c.putLocked(benchBatch)
		}
		b.ResetTimer()
		for i := range b.N {
			if i%1000 == 0 {
				c.mu.Lock()
				c.putLocked(benchBatch)
				c.mu.Unlock()
			}
			if _, err := c.Next(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("chan", func(b *testing.B) {
		ch := make(chan idcore.ID, 5000)
		fill := func() {
			for _, id := range benchBatch {
				ch <- idcore.ID(id)
			}
		}
		for range 4 {
			fill()
		}
		b.ResetTimer()
		for i := range b.N {
			if i%1000 == 0 {
				fill()
			}
			<-ch
		}
	})
	b.Run("mutex-slice", func(b *testing.B) {
		s := &mutexSlice{low: 4000}
		for range 4 {
			s.fill()
		}
		b.ResetTimer()
		for i := range b.N {
			if i%1000 == 0 {
				s.fill()
			}
			s.take()
		}
	})
	b.Run("slice", func(b *testing.B) {
		var sum idcore.ID
		for i := range b.N {
			sum += idcore.ID(benchBatch[i%1000])
		}
		_ = sum
	})
}

// BenchmarkNextParallel takes with GOMAXPROCS goroutines at once from a buffer filled beforehand
// (wall-clock only: its set-up grows with b.N).
func BenchmarkNextParallel(b *testing.B) {
	ctx := context.Background()
	b.Run("buffer", func(b *testing.B) {
		c := &Client{cfg: Config{Batch: 1000, LowWater: 4000, MaxLowWater: 4000}, mark: 4000, filled: make(chan struct{}), dry: make(chan struct{}),
			wake: make(chan struct{}, 1), stop: make(chan struct{}), inflight: map[*call]struct{}{}}
		c.cur.Store(used())
		for range b.N/1000 + 1 {
			c.putLocked(benchBatch)
		}
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Next(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("chan", func(b *testing.B) {
		ch := make(chan idcore.ID, b.N)
		for i := range b.N {
			ch <- idcore.ID(i + 1)
		}
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				<-ch
			}
		})
	})
	b.Run("mutex-slice", func(b *testing.B) {
		s := &mutexSlice{low: 4000}
		for range b.N/1000 + 1 {
			s.fill()
		}
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				s.take()
			}
		})
	})
}

// mutexSlice is the buffer as it was: one slice under a mutex, taken from the front, refills
// appended.
type mutexSlice struct {
	mu  sync.Mutex
	ids []idcore.ID
	low int
}

func (s *mutexSlice) fill() {
	s.mu.Lock()
	for _, id := range benchBatch {
		s.ids = append(s.ids, idcore.ID(id))
	}
	s.mu.Unlock()
}

func (s *mutexSlice) take() (idcore.ID, bool) {
	s.mu.Lock()
	id := s.ids[0]
	s.ids = s.ids[1:]
	low := len(s.ids) < s.low
	s.mu.Unlock()
	return id, low
}
