package gateway

import (
	"context"
	"errors"

	"github.com/idgen/idgen/services/public-id/mapping"
	"golang.org/x/sync/errgroup"
)

// publish finds the public ID of every internal ID of a response: the ones that have one are
// looked up (concurrently, so a Redis store pipelines them), and at most MaxNewIDs new ones are
// published. An ID declared as two resources, or whose public ID is another resource's, is a
// contradiction in the route or the upstream: unsafe, never a public ID with the wrong prefix.
// A response's few IDs (the common case) are told apart in a list, and one ID is looked up on the
// caller's goroutine: no set and no closure is made for them.
func (g *Gateway) publish(ctx context.Context, where []pendingID, known *Known) (map[int64]string, error) {
	// The distinct IDs, each with the index in where of its first occurrence; past smallSet of
	// them, found through a set.
	type distinct struct {
		first int
		pub   string
		found bool
	}
	uniq := make([]distinct, 0, min(len(where), smallSet))
	var seen map[int64]int // id → its index in uniq, past smallSet IDs
	for i, p := range where {
		u := -1
		if seen != nil {
			if v, ok := seen[p.id]; ok {
				u = v
			}
		} else {
			for v, d := range uniq {
				if where[d.first].id == p.id {
					u = v
					break
				}
			}
		}
		if u >= 0 {
			if j := uniq[u].first; where[j].resource != p.resource {
				return nil, unsafe(p.field, "one id is declared as %s and as %s", where[j].resource, p.resource)
			}
			continue
		}
		uniq = append(uniq, distinct{first: i})
		switch {
		case seen != nil:
			seen[p.id] = len(uniq) - 1
		case len(uniq) > smallSet:
			seen = make(map[int64]int, 2*len(uniq))
			for v, d := range uniq {
				seen[where[d.first].id] = v
			}
		}
		if known != nil {
			known.Add(p.id)
		}
	}
	if len(uniq) > g.o.MaxIDs {
		return nil, unsafe("", "%d ids in one response; at most %d", len(uniq), g.o.MaxIDs)
	}
	var err error
	if len(uniq) == 1 {
		uniq[0].pub, uniq[0].found, err = g.lookup(ctx, where[uniq[0].first].id)
	} else {
		err = each(ctx, len(uniq), func(ctx context.Context, i int) error {
			var err error
			uniq[i].pub, uniq[i].found, err = g.lookup(ctx, where[uniq[i].first].id)
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	var missing []int
	for i := range uniq {
		if !uniq[i].found {
			missing = append(missing, i)
		}
	}
	if len(missing) > g.o.MaxNewIDs {
		return nil, unsafe("", "%d ids have no public id yet; one response may publish at most %d", len(missing), g.o.MaxNewIDs)
	}
	if len(missing) > 0 {
		err = each(ctx, len(missing), func(ctx context.Context, m int) error {
			d := &uniq[missing[m]]
			res := where[d.first].resource
			pub, err := g.store.Publish(ctx, where[d.first].id, func() (string, error) { return g.maker.New(res) })
			d.pub = pub
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	out := make(map[int64]string, len(uniq))
	for _, d := range uniq {
		p := where[d.first]
		if res, err := g.maker.Parse(d.pub); err != nil || res != p.resource {
			return nil, unsafe(p.field, "declared as %s, but the id's public id is of another resource", p.resource)
		}
		out[p.id] = d.pub
	}
	return out, nil
}

// smallSet is how many distinct IDs publish tells apart in a list; past it, in a set.
const smallSet = 16

// lookup is the public ID of id, and whether it has one.
func (g *Gateway) lookup(ctx context.Context, id int64) (string, bool, error) {
	pub, err := g.store.Lookup(ctx, id)
	switch {
	case errors.Is(err, mapping.ErrNotFound):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	return pub, true, nil
}

// each calls f for 0 to n-1, at most 32 at once, and returns the first error; the context f gets
// is canceled after one. One call runs on the caller's goroutine.
func each(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	switch n {
	case 0:
		return nil
	case 1:
		return f(ctx, 0)
	}
	grp, gctx := errgroup.WithContext(ctx)
	grp.SetLimit(32)
	for i := range n {
		grp.Go(func() error { return f(gctx, i) })
	}
	return grp.Wait()
}
