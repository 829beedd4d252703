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
func (g *Gateway) publish(ctx context.Context, where []pendingID, known *Known) (map[int64]string, error) {
	want := make(map[int64]int, len(where)) // id → index of its first occurrence
	var uniq []int64
	for i, p := range where {
		j, seen := want[p.id]
		if !seen {
			want[p.id] = i
			uniq = append(uniq, p.id)
			if known != nil {
				known.Add(p.id)
			}
			continue
		}
		if where[j].resource != p.resource {
			return nil, unsafe(p.field, "one id is declared as %s and as %s", where[j].resource, p.resource)
		}
	}
	if len(uniq) > g.o.MaxIDs {
		return nil, unsafe("", "%d ids in one response; at most %d", len(uniq), g.o.MaxIDs)
	}
	pubs := make([]string, len(uniq))
	found := make([]bool, len(uniq))
	err := each(ctx, len(uniq), func(ctx context.Context, i int) error {
		pub, err := g.store.Lookup(ctx, uniq[i])
		if errors.Is(err, mapping.ErrNotFound) {
			return nil
		}
		pubs[i], found[i] = pub, err == nil
		return err
	})
	if err != nil {
		return nil, err
	}
	var missing []int
	for i := range uniq {
		if !found[i] {
			missing = append(missing, i)
		}
	}
	if len(missing) > g.o.MaxNewIDs {
		return nil, unsafe("", "%d ids have no public id yet; one response may publish at most %d", len(missing), g.o.MaxNewIDs)
	}
	err = each(ctx, len(missing), func(ctx context.Context, m int) error {
		i := missing[m]
		res := where[want[uniq[i]]].resource
		pub, err := g.store.Publish(ctx, uniq[i], func() (string, error) { return g.maker.New(res) })
		pubs[i] = pub
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(uniq))
	for i, id := range uniq {
		j := want[id]
		if res, err := g.maker.Parse(pubs[i]); err != nil || res != where[j].resource {
			return nil, unsafe(where[j].field, "declared as %s, but the id's public id is of another resource", where[j].resource)
		}
		out[id] = pubs[i]
	}
	return out, nil
}

// each calls f for 0 to n-1, at most 32 at once, and returns the first error; the context f gets
// is canceled after one. One call (the common case: a response of one ID) runs on the caller's
// goroutine.
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
