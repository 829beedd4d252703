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
	grp, gctx := errgroup.WithContext(ctx)
	grp.SetLimit(32)
	for i, id := range uniq {
		grp.Go(func() error {
			pub, err := g.store.Lookup(gctx, id)
			if errors.Is(err, mapping.ErrNotFound) {
				return nil
			}
			pubs[i], found[i] = pub, err == nil
			return err
		})
	}
	if err := grp.Wait(); err != nil {
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
	grp, gctx = errgroup.WithContext(ctx)
	grp.SetLimit(32)
	for _, i := range missing {
		res := where[want[uniq[i]]].resource
		grp.Go(func() error {
			pub, err := g.store.Publish(gctx, uniq[i], func() (string, error) { return g.maker.New(res) })
			pubs[i] = pub
			return err
		})
	}
	if err := grp.Wait(); err != nil {
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
