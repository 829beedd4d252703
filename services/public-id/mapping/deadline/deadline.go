// Package deadline bounds every call of a mapping store: a store that is frozen, slow or
// unreachable answers within the bound, with mapping.ErrUnavailable, instead of holding its
// caller (a customer's request, /healthz) for as long as the network lets it. The bound is the
// caller's own deadline when that is sooner.
//
// A driver need not honour its context for the bound to hold (go-redis's autopipeliner, which
// the Redis driver reads and writes through, does not once a command is queued): each call runs
// on a goroutine of its own, and the caller stops waiting at the bound. A call given up on runs
// to its end in the background (the driver's own timeouts end it), holding one of MaxInFlight
// slots; with every slot taken, a call fails at once, so a frozen store cannot make waiting
// calls pile up without bound.
//
// The goroutines are workers kept between calls (a workers.Pool of up to maxWorkers, idle ones
// ending at Close): a goroutine of its own per call starts on the runtime's smallest stack, which
// a publish on Redis (the driver, sqids) outgrows by doubling it several times, each doubling a
// copy that walks every frame: about 17,000 instructions of a publish's 215,000 under callgrind.
package deadline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idgen/idgen/libs/svc/workers"
	"github.com/idgen/idgen/services/public-id/mapping"
)

// MaxInFlight bounds the calls of one Store running at once, those given up on included.
const MaxInFlight = 1024

// Store is a mapping.Store whose every call ends within its timeout.
type Store struct {
	inner   mapping.Store
	timeout time.Duration
	slots   chan struct{} // a call's, until the driver returns
	workers *workers.Pool[func()]
}

// maxWorkers bounds the workers kept between calls; a call that finds none idle and the bound
// reached runs on a goroutine of its own.
const maxWorkers = 64

// New bounds every call of inner to timeout (positive).
func New(inner mapping.Store, timeout time.Duration) (*Store, error) {
	if timeout <= 0 {
		return nil, fmt.Errorf("deadline: a store call's bound %v: want a positive duration", timeout)
	}
	return &Store{inner: inner, timeout: timeout, slots: make(chan struct{}, MaxInFlight),
		workers: workers.New(maxWorkers, func(f func()) { f() })}, nil
}

// spawn runs f (which returns, panics recovered) on an idle worker, a new one, or past
// maxWorkers a goroutine of its own.
func (s *Store) spawn(f func()) {
	if !s.workers.TryGo(f) {
		go f()
	}
}

type result[T any] struct {
	v        T
	err      error
	panic    any
	panicked bool
}

// call runs f under the bound, and reports a call the bound cut short as unavailable (unless
// the caller's own context ended first: then its error is the caller's).
func call[T any](ctx context.Context, s *Store, op string, f func(context.Context) (T, error)) (T, error) {
	var zero T
	select {
	case s.slots <- struct{}{}:
	default:
		return zero, fmt.Errorf("%w: %s: %d calls to the store in flight", mapping.ErrUnavailable, op, MaxInFlight)
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	done := make(chan result[T], 1)
	s.spawn(func() {
		defer func() { <-s.slots }()
		defer func() {
			if p := recover(); p != nil {
				done <- result[T]{panic: p, panicked: true}
			}
		}()
		v, err := f(cctx)
		done <- result[T]{v: v, err: err}
	})
	select {
	case r := <-done:
		if r.panicked {
			panic(r.panic)
		}
		if r.err != nil && ctx.Err() == nil && cctx.Err() != nil && !errors.Is(r.err, mapping.ErrUnavailable) {
			r.err = fmt.Errorf("%w: %s: no answer within %v: %w", mapping.ErrUnavailable, op, s.timeout, r.err)
		}
		return r.v, r.err
	case <-cctx.Done():
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		return zero, fmt.Errorf("%w: %s: no answer within %v", mapping.ErrUnavailable, op, s.timeout)
	}
}

// Publish implements mapping.Store.
func (s *Store) Publish(ctx context.Context, internal int64, newPublic func() (string, error)) (string, error) {
	return call(ctx, s, "publish", func(ctx context.Context) (string, error) { return s.inner.Publish(ctx, internal, newPublic) })
}

// Lookup implements mapping.Store.
func (s *Store) Lookup(ctx context.Context, internal int64) (string, error) {
	return call(ctx, s, "lookup", func(ctx context.Context) (string, error) { return s.inner.Lookup(ctx, internal) })
}

// Resolve implements mapping.Store.
func (s *Store) Resolve(ctx context.Context, public string) (int64, error) {
	return call(ctx, s, "resolve", func(ctx context.Context) (int64, error) { return s.inner.Resolve(ctx, public) })
}

// PutToken implements mapping.Store.
func (s *Store) PutToken(ctx context.Context, handle string, value []byte, ttl time.Duration) error {
	_, err := call(ctx, s, "put token", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.inner.PutToken(ctx, handle, value, ttl)
	})
	return err
}

// GetToken implements mapping.Store.
func (s *Store) GetToken(ctx context.Context, handle string) ([]byte, error) {
	return call(ctx, s, "get token", func(ctx context.Context) ([]byte, error) { return s.inner.GetToken(ctx, handle) })
}

// Secret implements mapping.Store.
func (s *Store) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	return call(ctx, s, "secret", func(ctx context.Context) ([]byte, error) { return s.inner.Secret(ctx, name, size) })
}

// Close implements mapping.Store: it closes the inner store, and the idle workers end (a busy one
// when its call returns).
func (s *Store) Close() error {
	s.workers.Close()
	return s.inner.Close()
}
