// Package quota enforces per-caller quotas in IDs per second with token buckets
// (golang.org/x/time/rate): a batch of n IDs takes n tokens.
package quota

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter holds one bucket per caller.
type Limiter struct {
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	now     func() time.Time
}

// New returns a limiter; now is the clock (nil: time.Now).
func New(now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{buckets: map[string]*rate.Limiter{}, now: now}
}

// Take takes n tokens from the caller's bucket (perSecond tokens a second, burst at most).
// perSecond 0 means no quota. When the bucket cannot give n now, it takes nothing and says how
// long until it could.
func (l *Limiter) Take(caller string, perSecond float64, burst, n int) (ok bool, retryAfter time.Duration) {
	if perSecond <= 0 {
		return true, 0
	}
	l.mu.Lock()
	b := l.buckets[caller]
	if b == nil {
		b = rate.NewLimiter(rate.Limit(perSecond), burst)
		l.buckets[caller] = b
	}
	l.mu.Unlock()
	now := l.now()
	if n > b.Burst() {
		return false, time.Duration(math.Ceil(float64(n)/perSecond)) * time.Second
	}
	r := b.ReserveN(now, n)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// RetryAfterSeconds renders a wait as a Retry-After value: whole seconds, at least 1.
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
