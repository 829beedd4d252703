// Package backfill copies every mapping of one store into a mapping.Replica and verifies each
// copy: how a Redis-only deployment fills DynamoDB, its store of record (idgenctl publicids
// backfill), and how the cross-region store can fill a region.
//
// The source is read page by page (a Scanner: redismap.Store.Scan, or any Replica's Scan). Each
// pair is copied with Replica.Copy, then verified on the target: Resolve of the public ID must
// give the internal ID, and Lookup of the internal ID the public ID Copy returned (another one
// than the source's when the internal ID had a public ID in the target already: counted as
// differing; both then resolve). After every page the source's cursor and the counts are handed
// to Options.Save, so a run that stops (a cancelled context, a store that became unavailable)
// goes on from the last saved page: the page under way when it stopped is copied again, which
// is harmless (Copy is idempotent) and counts its pairs as already present.
package backfill

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/idgen/idgen/services/public-id/mapping"
	"golang.org/x/sync/errgroup"
)

// Scanner is a store whose mappings can be listed page by page, with the meaning of
// mapping.Replica's Scan.
type Scanner interface {
	Scan(ctx context.Context, cursor string, limit int) (pairs []mapping.Pair, next string, err error)
}

// Counts are what a backfill did. Every pair read from the source ends either verified or
// failed: Scanned = Verified + Failed. Every pair the target took was copied or already present
// (Copied + AlreadyPresent = Scanned less the pairs it refused), and Differing counts the
// verified ones whose internal ID keeps another public ID in the target.
type Counts struct {
	Pages          int64 `json:"pages"`
	Scanned        int64 `json:"scanned"`
	Copied         int64 `json:"copied"`          // written by this run
	AlreadyPresent int64 `json:"already_present"` // the target resolved the public ID to the internal ID before the copy
	Verified       int64 `json:"verified"`
	Differing      int64 `json:"differing"` // the internal ID had another public ID in the target: that one stays its
	Failed         int64 `json:"failed"`    // Copy refused it (mapping.ErrConflict), or the verification failed
}

// Failure is one pair that failed, and why.
type Failure struct {
	Public   string `json:"public"`
	Internal int64  `json:"internal"`
	Error    string `json:"error"`
}

// Difference is one pair whose internal ID has another public ID in the target.
type Difference struct {
	Public   string `json:"public"`   // the source's
	Internal int64  `json:"internal"` //
	Target   string `json:"target"`   // the public ID the internal ID has in the target
}

// MaxListed bounds the failures and differences a State lists (all are counted).
const MaxListed = 1000

// State is a backfill's progress: what Options.Save is given after every page, and what a run
// that goes on starts from.
type State struct {
	Cursor      string       `json:"cursor"` // the source's cursor of the next page
	Done        bool         `json:"done"`   // every page was copied
	Counts      Counts       `json:"counts"`
	Failures    []Failure    `json:"failures,omitempty"`
	Differences []Difference `json:"differences,omitempty"`
}

// Options are a run's settings; the zero value is the default.
type Options struct {
	PageSize int // pairs asked of the source per page; 0 for 500
	Workers  int // pairs copied and verified at once; 0 for 16
	// Save is called with the state after every page, before the next is read; an error ends
	// the run. nil saves nothing.
	Save func(State) error
	// Retries is how often an unavailable target (mapping.ErrUnavailable) is retried for one
	// call, with a backoff from 100 ms to 5 s; 0 for 8. Past that the run stops with the error,
	// the last saved state being where it goes on.
	Retries int
}

// Run copies the source's mappings from st (the zero State for a run from the start) into
// target, page by page, and returns the state it ended with. It stops at the first error of
// the source, of Save, or of a target that stays unavailable, or when ctx ends; the state it
// returns then is the last one saved, from which another run goes on. A pair the target refuses
// (mapping.ErrConflict) or that does not verify is counted failed and listed, and the run goes
// on. A State already Done is returned as it is.
func Run(ctx context.Context, source Scanner, target mapping.Replica, st State, o Options) (State, error) {
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	if o.Workers <= 0 {
		o.Workers = 16
	}
	if o.Retries <= 0 {
		o.Retries = 8
	}
	for !st.Done {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		pairs, next, err := source.Scan(ctx, st.Cursor, o.PageSize)
		if err != nil {
			return st, fmt.Errorf("backfill: source: %w", err)
		}
		page, err := copyPage(ctx, target, pairs, o)
		if err != nil {
			return st, err
		}
		nst := st
		nst.Cursor, nst.Done = next, next == ""
		nst.Counts.add(page.counts)
		nst.Counts.Pages++
		nst.Failures = appendMax(slices.Clone(st.Failures), page.failures...)
		nst.Differences = appendMax(slices.Clone(st.Differences), page.differences...)
		if o.Save != nil {
			if err := o.Save(nst); err != nil {
				return st, fmt.Errorf("backfill: save state: %w", err)
			}
		}
		st = nst
	}
	return st, nil
}

func appendMax[T any](s []T, v ...T) []T {
	if room := MaxListed - len(s); room < len(v) {
		v = v[:max(room, 0)]
	}
	return append(s, v...)
}

func (c *Counts) add(d Counts) {
	c.Scanned += d.Scanned
	c.Copied += d.Copied
	c.AlreadyPresent += d.AlreadyPresent
	c.Verified += d.Verified
	c.Differing += d.Differing
	c.Failed += d.Failed
}

type pageResult struct {
	counts      Counts
	failures    []Failure
	differences []Difference
}

// copyPage copies and verifies one page's pairs, o.Workers at once. Its error is one that stops
// the run (the target unavailable after the retries, ctx ended); a pair's own failure is counted.
func copyPage(ctx context.Context, target mapping.Replica, pairs []mapping.Pair, o Options) (pageResult, error) {
	var (
		mu  sync.Mutex
		res = pageResult{counts: Counts{Scanned: int64(len(pairs))}}
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Workers)
	for _, p := range pairs {
		g.Go(func() error {
			out, err := copyOne(gctx, target, p, o.Retries)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			c := &res.counts
			if out.already {
				c.AlreadyPresent++
			} else if out.copied {
				c.Copied++
			}
			switch {
			case out.failure != "":
				c.Failed++
				res.failures = append(res.failures, Failure{Public: p.Public, Internal: p.Internal, Error: out.failure})
			default:
				c.Verified++
				if out.public != p.Public {
					c.Differing++
					res.differences = append(res.differences, Difference{Public: p.Public, Internal: p.Internal, Target: out.public})
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return pageResult{}, err
	}
	return res, nil
}

type outcome struct {
	already, copied bool
	public          string // the public ID the internal ID has in the target
	failure         string // why the pair failed ("" when verified)
}

// copyOne copies one pair and verifies it. Its error stops the run; a refusal or a failed
// verification is the outcome's failure.
func copyOne(ctx context.Context, target mapping.Replica, p mapping.Pair, retries int) (outcome, error) {
	var out outcome
	in, err := retry(ctx, retries, func() (int64, error) { return target.Resolve(ctx, p.Public) })
	switch {
	case err == nil && in == p.Internal:
		out.already = true
	case err == nil:
		out.failure = fmt.Sprintf("%v: the target maps %s to %d, not %d", mapping.ErrConflict, p.Public, in, p.Internal)
		return out, nil
	case !errors.Is(err, mapping.ErrNotFound):
		return out, stopErr("resolve", p, err)
	}
	pub, err := retry(ctx, retries, func() (string, error) { return target.Copy(ctx, p.Internal, p.Public) })
	if errors.Is(err, mapping.ErrConflict) {
		out.failure = err.Error()
		return out, nil
	}
	if err != nil {
		return out, stopErr("copy", p, err)
	}
	out.copied, out.public = !out.already, pub
	// The verification: the target answers what Copy said, in both directions.
	got, err := retry(ctx, retries, func() (int64, error) { return target.Resolve(ctx, p.Public) })
	switch {
	case err == nil && got != p.Internal:
		out.failure = fmt.Sprintf("after the copy the target resolves %s to %d, not %d", p.Public, got, p.Internal)
		return out, nil
	case errors.Is(err, mapping.ErrNotFound):
		out.failure = fmt.Sprintf("after the copy the target does not resolve %s", p.Public)
		return out, nil
	case err != nil:
		return out, stopErr("verify", p, err)
	}
	back, err := retry(ctx, retries, func() (string, error) { return target.Lookup(ctx, p.Internal) })
	switch {
	case err == nil && back != pub:
		out.failure = fmt.Sprintf("after the copy the target looks %d up as %s, not %s as Copy said", p.Internal, back, pub)
	case errors.Is(err, mapping.ErrNotFound):
		out.failure = fmt.Sprintf("after the copy the target has no public ID for %d", p.Internal)
	case err != nil:
		return out, stopErr("verify", p, err)
	}
	return out, nil
}

// stopErr is an error that ends the run: unavailability past the retries, ctx ended, or an
// error that is no answer about the pair.
func stopErr(op string, p mapping.Pair, err error) error {
	return fmt.Errorf("backfill: %s %s → %d: %w", op, p.Public, p.Internal, err)
}

// retry calls f until it answers anything but mapping.ErrUnavailable, at most retries more times,
// with a backoff from 100 ms to 5 s.
func retry[T any](ctx context.Context, retries int, f func() (T, error)) (T, error) {
	wait := 100 * time.Millisecond
	for i := 0; ; i++ {
		v, err := f()
		if !errors.Is(err, mapping.ErrUnavailable) || i >= retries || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}
