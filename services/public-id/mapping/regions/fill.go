package regions

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/idgen/idgen/services/public-id/mapping"
)

// FillResult is what a fill did.
type FillResult struct {
	// Copied counts the mappings copied into the local region (each read back: Verified), and
	// Differ those whose internal ID held another public ID there already (both resolve).
	Copied, Verified, Differ int64
	// Already is true when the region was filled before this call.
	Already bool
}

// Fill fills the local region's store from the others' and marks it filled (its note), unless it
// is already: it copies every mapping whose owner or owner's peer is the local region, from every
// other region's store, reads each one back, and records its progress in FillProgressNote after
// every page, so a fill that stops (a crash, ctx) goes on from there. A region that does not answer is
// tried again after retry until ctx ends; until every region has been copied from, the local
// region is not filled.
func (s *Store) Fill(ctx context.Context, retry time.Duration) (FillResult, error) {
	n, err := s.note(ctx, s.local)
	for err != nil {
		s.o.Logger.Warn("the local region's fill note cannot be read; trying again", "err", err)
		if !sleep(ctx, retry) {
			return FillResult{}, ctx.Err()
		}
		n, err = s.note(ctx, s.local)
	}
	if n.Done {
		s.local.filled.Store(true)
		s.local.notedAt.Store(s.o.now().UnixNano())
		return FillResult{Copied: n.Copied, Verified: n.Verified, Differ: n.Differ, Already: true}, nil
	}
	if pn, err := s.noteNamed(ctx, s.local, FillProgressNote); err == nil {
		n = pn // where a fill that stopped, or one under way in another process, got to
		n.Done = false
	}
	s.o.Logger.Info("filling the local region's mapping store from the other regions", "region", s.local.name, "from_source", n.Source, "copied_before", n.Copied)
	for n.Source < len(s.all) {
		src := s.all[n.Source]
		if src == s.local {
			n.Source, n.Cursor = n.Source+1, ""
			continue
		}
		page, err := call(s, ctx, src, "scan", func(ctx context.Context, rep mapping.Replica) (scanPage, error) {
			p, nx, err := rep.Scan(ctx, n.Cursor, s.o.FillPage)
			return scanPage{p, nx}, err
		})
		next := n
		if err == nil {
			err = s.copyPage(ctx, page.pairs, &next)
		}
		if err != nil {
			if ctx.Err() != nil {
				return FillResult{}, ctx.Err()
			}
			s.o.Logger.Warn("filling: a page could not be copied; trying again", "from", src.name, "err", err)
			if !sleep(ctx, retry) {
				return FillResult{}, ctx.Err()
			}
			continue
		}
		n = next
		n.Cursor = page.next
		if page.next == "" {
			n.Source++
		}
		if err := s.saveNote(ctx, FillProgressNote, n); err != nil {
			s.o.Logger.Warn("filling: progress not recorded (the next page is copied again after a restart)", "err", err)
		}
	}
	n.Done = true
	for {
		err := s.saveNote(ctx, FillNote, n)
		if err == nil {
			break
		}
		s.o.Logger.Warn("filling: the note that ends the fill cannot be written; trying again", "err", err)
		if !sleep(ctx, retry) {
			return FillResult{}, ctx.Err()
		}
	}
	s.local.filled.Store(true)
	s.local.notedAt.Store(s.o.now().UnixNano())
	s.o.Logger.Info("the local region's mapping store is filled", "region", s.local.name, "copied", n.Copied, "verified", n.Verified, "differ", n.Differ)
	return FillResult{Copied: n.Copied, Verified: n.Verified, Differ: n.Differ}, nil
}

type scanPage struct {
	pairs []mapping.Pair
	next  string
}

// copyPage copies the pairs of one page that belong in the local region and reads each back,
// counting them in n (the caller keeps n only when the whole page is copied).
func (s *Store) copyPage(ctx context.Context, pairs []mapping.Pair, n *fillNote) error {
	for _, pr := range pairs {
		if !s.home(pr.Internal, s.local) {
			continue
		}
		got, err := call(s, ctx, s.local, "copy", func(ctx context.Context, rep mapping.Replica) (string, error) {
			return rep.Copy(ctx, pr.Internal, pr.Public)
		})
		if err != nil {
			return err
		}
		back, err := call(s, ctx, s.local, "resolve", func(ctx context.Context, rep mapping.Replica) (int64, error) {
			return rep.Resolve(ctx, pr.Public)
		})
		if err != nil {
			return fmt.Errorf("reading back %s: %w", pr.Public, err)
		}
		if back != pr.Internal {
			return fmt.Errorf("reading back a copied mapping: its public id resolves to %d, not %d", back, pr.Internal)
		}
		n.Copied++
		n.Verified++
		s.m.filled.Inc()
		if got != pr.Public {
			n.Differ++
		}
	}
	return nil
}

func (s *Store) saveNote(ctx context.Context, name string, n fillNote) error {
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	_, err = call(s, ctx, s.local, "set_note", func(ctx context.Context, rep mapping.Replica) (struct{}, error) {
		return struct{}{}, rep.SetNote(ctx, name, b)
	})
	return err
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
