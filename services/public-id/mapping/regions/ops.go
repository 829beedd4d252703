package regions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/idgen/idgen/services/public-id/mapping"
)

// answer is one region's answer to a read.
type answer[T any] struct {
	r   *region
	v   T
	err error
}

// first asks every region of rs at once and returns the first found answer (canceling the
// others), else ErrNotFound when every region answered a miss, else the count of regions that
// failed. A region not yet filled that answers a miss counts as failed: it may not hold the
// mapping yet.
func first[T any](s *Store, ctx context.Context, rs []*region, op string, f func(context.Context, mapping.Replica) (T, error)) (v T, from *region, failed int, err error) {
	if len(rs) == 0 {
		return v, nil, 0, mapping.ErrNotFound
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan answer[T], len(rs))
	for _, r := range rs {
		go func() {
			v, err := call(s, ctx, r, op, f)
			ch <- answer[T]{r, v, err}
		}()
	}
	var other error
	for range rs {
		a := <-ch
		switch {
		case a.err == nil:
			return a.v, a.r, failed, nil
		case errors.Is(a.err, mapping.ErrNotFound):
			if !s.isFilled(ctx, a.r) {
				failed++
			}
		case errors.Is(a.err, mapping.ErrUnavailable):
			failed++
		default:
			// Any other error of one region's store (a refused request: an IAM change, a
			// table renamed) says nothing of the others': that region did not answer.
			other = a.err
			failed++
		}
	}
	if failed > 0 {
		if other != nil {
			return v, nil, failed, fmt.Errorf("%w: %d of %d regions did not answer: %w", mapping.ErrUnavailable, failed, len(rs), other)
		}
		return v, nil, failed, fmt.Errorf("%w: %d of %d regions did not answer", mapping.ErrUnavailable, failed, len(rs))
	}
	return v, nil, 0, mapping.ErrNotFound
}

// Resolve returns the internal ID of a public ID from the first region that has it: the local
// one, then (on a miss, a failure, or no answer within HedgeAfter) every other at once.
func (s *Store) Resolve(ctx context.Context, public string) (int64, error) {
	if s.neg.has(public) {
		s.m.fanouts.WithLabelValues("negative_cache").Inc()
		return 0, mapping.ErrNotFound
	}
	resolve := func(ctx context.Context, rep mapping.Replica) (int64, error) { return rep.Resolve(ctx, public) }
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	local := make(chan answer[int64], 1)
	go func() {
		v, err := call(s, ctx, s.local, "resolve", resolve)
		local <- answer[int64]{s.local, v, err}
	}()
	hedge := time.NewTimer(s.o.HedgeAfter)
	defer hedge.Stop()
	localFailed := 0
	select {
	case a := <-local:
		if a.err == nil {
			return a.v, nil
		}
		if !errors.Is(a.err, mapping.ErrNotFound) || !s.isFilled(ctx, s.local) {
			localFailed = 1
		}
		local = nil
	case <-hedge.C:
		localFailed = 1 // counted as failed unless it answers first (below)
	}
	select {
	case s.fanouts <- struct{}{}:
		defer func() { <-s.fanouts }()
	default:
		s.m.fanouts.WithLabelValues("refused").Inc()
		return 0, fmt.Errorf("%w: %d fan-outs to other regions in flight", mapping.ErrUnavailable, s.o.MaxFanOuts)
	}
	others := slices.DeleteFunc(slices.Clone(s.all), func(r *region) bool { return r == s.local })
	type result struct {
		v      int64
		failed int
		err    error
	}
	remote := make(chan result, 1)
	go func() {
		v, _, failed, err := first(s, ctx, others, "resolve", resolve)
		remote <- result{v, failed, err}
	}()
	var rem *result
	for rem == nil || local != nil {
		select {
		case a := <-local:
			local = nil
			if a.err == nil {
				s.m.fanouts.WithLabelValues("found_local").Inc()
				return a.v, nil
			}
			if errors.Is(a.err, mapping.ErrNotFound) && s.isFilled(ctx, s.local) {
				localFailed = 0
			}
		case r := <-remote:
			rem = &r
			if r.err == nil {
				s.m.fanouts.WithLabelValues("found").Inc()
				return r.v, nil
			}
			if local != nil {
				continue // only the local store's answer can settle it: wait for it (within its call timeout)
			}
		}
	}
	failed := rem.failed + localFailed
	if failed == 0 {
		s.m.fanouts.WithLabelValues("not_found").Inc()
		s.neg.add(public)
		return 0, mapping.ErrNotFound
	}
	s.m.fanouts.WithLabelValues("unavailable").Inc()
	return 0, fmt.Errorf("%w: %d regions did not answer (or are being filled), and a mapping may be held by them alone", mapping.ErrUnavailable, failed)
}

// Lookup returns the public ID internal has, once Copies regions hold it: asked of its owner and
// the owner's peer at once (then, when either failed, of the other regions), and copied to the
// other first when only one holds it (a publish cut short before its copy, whose public ID was
// never acknowledged, is never handed out from one region alone). When no region that answered
// has one, it is ErrNotFound, so that a caller publishes (Publish decides, and finds what a
// region that did not answer here may hold).
func (s *Store) Lookup(ctx context.Context, internal int64) (string, error) {
	order := s.placement(internal)
	p, holders, _, err := s.findExisting(ctx, internal, order)
	if errors.Is(err, mapping.ErrUnavailable) {
		return "", mapping.ErrNotFound
	}
	if err != nil {
		return "", err
	}
	return s.ensureCopies(ctx, order, internal, p, holders)
}

// findExisting asks the owner and the peer at once, waiting for both, and returns the public ID
// internal has (the owner's when the two differ) and the regions that hold it; when one of them
// did not answer (or is being filled), the other regions are asked too, since a region that
// stood in for it may hold the mapping. It also returns the home regions that did not answer.
func (s *Store) findExisting(ctx context.Context, internal int64, order []*region) (string, []*region, []*region, error) {
	lookup := func(ctx context.Context, rep mapping.Replica) (string, error) { return rep.Lookup(ctx, internal) }
	home := order[:min(2, len(order))]
	answers := make([]answer[string], len(home))
	var wg sync.WaitGroup
	for i, r := range home {
		wg.Go(func() {
			v, err := call(s, ctx, r, "lookup", lookup)
			answers[i] = answer[string]{r, v, err}
		})
	}
	wg.Wait()
	var p string
	var holders, failed []*region
	for _, a := range answers { // the owner first
		switch {
		case a.err == nil && (p == "" || a.v == p):
			p, holders = a.v, append(holders, a.r)
		case a.err == nil:
			// a second public ID (both sides of a partition): the owner's is the one given out
		case errors.Is(a.err, mapping.ErrNotFound) && s.filledNow(ctx, a.r):
		default:
			failed = append(failed, a.r)
		}
	}
	if p != "" {
		return p, holders, failed, nil
	}
	if len(failed) == 0 {
		return "", nil, nil, mapping.ErrNotFound
	}
	p2, from, _, err := first(s, ctx, order[len(home):], "lookup", lookup)
	if err == nil {
		return p2, []*region{from}, failed, nil
	}
	return "", nil, failed, fmt.Errorf("%w: %d of the regions internal id %d belongs to did not answer, and no other region has it", mapping.ErrUnavailable, len(failed), internal)
}

// Publish returns the public ID of internal, making one if it has none, once Copies regions hold
// it. The owner's store chooses a new one; the owner and its peer are asked first whether one was
// chosen already.
func (s *Store) Publish(ctx context.Context, internal int64, newPublic func() (string, error)) (string, error) {
	if !s.Filled(ctx) {
		s.m.publishes.WithLabelValues("filling").Inc()
		return "", ErrFilling
	}
	order := s.placement(internal)
	p, holders, failed, err := s.findExisting(ctx, internal, order)
	switch {
	case err == nil:
		return s.ensureCopies(ctx, order, internal, p, holders)
	case !errors.Is(err, mapping.ErrNotFound) && !errors.Is(err, mapping.ErrUnavailable):
		return "", err
	}
	// No region that answered has one: the first region of the order that is filled and
	// answers chooses it (not one that failed the lookup just now: asking it again would cost
	// another call timeout).
	for _, r := range s.byHealthFromOwner(order) {
		if slices.Contains(failed, r) {
			continue
		}
		if !s.isFilled(ctx, r) {
			// Not filled at the last reading: read its note now (a region seldom chooses away
			// from its owner, and one just filled must not be skipped).
			if ok, _ := s.readNote(ctx, r); !ok {
				continue
			}
		}
		p, err := call(s, ctx, r, "publish", func(ctx context.Context, rep mapping.Replica) (string, error) {
			return rep.Publish(ctx, internal, newPublic)
		})
		if errors.Is(err, mapping.ErrUnavailable) {
			if r == order[0] {
				// The owner answered the lookup a moment ago: it is busy (concurrent publishes of
				// this ID), not unreachable, and choosing elsewhere would make a second public
				// ID. Not acknowledged; a retry finds the owner's.
				s.m.publishes.WithLabelValues("short").Inc()
				return "", fmt.Errorf("%w: the owner region %s answered but could not publish now: %w", mapping.ErrUnavailable, r.name, err)
			}
			continue
		}
		if err != nil {
			return "", err
		}
		if r != order[0] {
			s.m.publishes.WithLabelValues("chosen_away_from_owner").Inc()
			s.o.Logger.Warn("a public id was chosen away from its owner region, which did not answer", "owner", order[0].name, "chosen_in", r.name)
		}
		return s.ensureCopies(ctx, order, internal, p, []*region{r})
	}
	s.m.publishes.WithLabelValues("short").Inc()
	return "", fmt.Errorf("%w: no region could choose the public id", mapping.ErrUnavailable)
}

// filledNow reports r's fill, reading its note at once when the last reading said it is not
// filled (one read, only then): a region just filled must not count as one that did not answer.
func (s *Store) filledNow(ctx context.Context, r *region) bool {
	if s.isFilled(ctx, r) {
		return true
	}
	ok, _ := s.readNote(ctx, r)
	return ok
}

// byHealthFromOwner is order with the owner first whatever its health (a suspect owner is still
// asked first: choosing away from it risks a second public ID), the rest by health.
func (s *Store) byHealthFromOwner(order []*region) []*region {
	return append([]*region{order[0]}, s.byHealth(order[1:])...)
}

// ensureCopies writes p to the regions of order, in order (healthy ones first), until Copies of
// them hold it (held already do), and returns p; fewer is ErrUnavailable, and the publish is not
// acknowledged (a retry finds p and copies it on).
func (s *Store) ensureCopies(ctx context.Context, order []*region, internal int64, p string, held []*region) (string, error) {
	holders := slices.Clone(held)
	copies := len(holders)
	defer func() { s.repairLater(order, internal, p, holders) }()
	for _, r := range s.byHealth(order) {
		if copies >= s.Copies() {
			break
		}
		if slices.Contains(held, r) {
			continue
		}
		got, err := call(s, ctx, r, "copy", func(ctx context.Context, rep mapping.Replica) (string, error) {
			return rep.Copy(ctx, internal, p)
		})
		if errors.Is(err, mapping.ErrConflict) {
			return "", err
		}
		if err != nil { // unavailable, or refused: another region takes its place
			continue
		}
		if got != p {
			s.m.publishes.WithLabelValues("two_public_ids").Inc()
			s.o.Logger.Warn("an internal id has two public ids (chosen on both sides of a partition); both resolve to it", "region", r.name, "owner", order[0].name)
		}
		copies++
		holders = append(holders, r)
	}
	s.neg.remove(p)
	if copies < s.Copies() {
		s.m.publishes.WithLabelValues("short").Inc()
		return "", fmt.Errorf("%w: %d of the %d regions a mapping needs hold it", mapping.ErrUnavailable, copies, s.Copies())
	}
	s.m.publishes.WithLabelValues("ok").Inc()
	return p, nil
}

// Copy stores a mapping made elsewhere (a backfill's) where it belongs, as mapping.Replica's Copy
// does: public resolves to internal in Copies regions, and internal keeps the public ID it has,
// which Copy returns (public when it had none). It is refused (ErrFilling) while the local region
// is being filled.
func (s *Store) Copy(ctx context.Context, internal int64, public string) (string, error) {
	p, err := s.Publish(ctx, internal, func() (string, error) { return public, nil })
	if err != nil || p == public {
		return p, err
	}
	if _, err := s.ensureCopies(ctx, s.placement(internal), internal, public, nil); err != nil {
		return "", err
	}
	return p, nil
}
