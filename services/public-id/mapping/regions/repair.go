package regions

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/idgen/idgen/services/public-id/mapping"
)

// repair is a copy of a mapping still owed to one of the two regions it belongs to (its owner or
// the owner's peer), which did not answer when the mapping was published: another region took
// its place then. Copying it there later keeps two copies in the regions a fill restores, so that
// losing the region that stood in loses nothing.
type repair struct {
	internal int64
	public   string
	to       *region
}

// repairLater queues the copies of p that the regions internal belongs to did not take (those of
// its owner and the owner's peer not among holders), for the repair loop.
func (s *Store) repairLater(order []*region, internal int64, p string, holders []*region) {
	if len(holders) == 0 {
		return
	}
	for _, r := range order[:min(2, len(order))] {
		if slices.Contains(holders, r) {
			continue
		}
		s.repairMu.Lock()
		if len(s.repairs) >= s.o.RepairMax {
			s.repairMu.Unlock()
			s.m.repairs.WithLabelValues("dropped").Inc()
			continue
		}
		s.repairs = append(s.repairs, repair{internal, p, r})
		s.repairMu.Unlock()
		s.m.repairs.WithLabelValues("queued").Inc()
	}
}

// repairLoop copies the queued repairs every RepairEvery until ctx ends; one whose region still
// does not answer waits for the next round.
func (s *Store) repairLoop(ctx context.Context) {
	t := time.NewTicker(s.o.RepairEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.repairMu.Lock()
		batch := s.repairs
		s.repairs = nil
		s.repairMu.Unlock()
		var again []repair
		for _, rp := range batch {
			if ctx.Err() != nil {
				again = append(again, rp)
				continue
			}
			_, err := call(s, ctx, rp.to, "repair", func(ctx context.Context, rep mapping.Replica) (string, error) {
				return rep.Copy(ctx, rp.internal, rp.public)
			})
			switch {
			case err == nil:
				s.m.repairs.WithLabelValues("copied").Inc()
			case errors.Is(err, mapping.ErrUnavailable):
				again = append(again, rp)
			default:
				s.m.repairs.WithLabelValues("failed").Inc()
				s.o.Logger.Error("a mapping could not be copied back to a region it belongs to", "region", rp.to.name, "err", err)
			}
		}
		if len(again) > 0 {
			s.repairMu.Lock()
			s.repairs = append(again, s.repairs...)
			s.repairMu.Unlock()
		}
	}
}

// Repairs is how many copies are still owed to the regions their mappings belong to.
func (s *Store) Repairs() int {
	s.repairMu.Lock()
	defer s.repairMu.Unlock()
	return len(s.repairs)
}
