package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/publicid"
)

// Tokens: a route's token fields (an upstream's page cursor, a continuation token) never reach
// the customer as the upstream wrote them, since upstreams put internal IDs in them (base64 of
// the last order's ID, say). The value is kept in the mapping store under a handle of the
// gateway's own, "tok_" and 128 bits from crypto/rand in the public IDs' alphabet, with the
// route's name and the token's ttl; the customer gets the handle. A query parameter of type
// token takes a handle back: the upstream gets the value the handle was issued for, and only on
// the route that issued it. An unknown, expired, malformed or other route's handle is one answer,
// 400 "query parameter NAME: unknown or expired token", so probing learns nothing. The
// upstream's value is bounded by the field's max_len but never scanned: it reaches no customer.

// tokenPrefix starts every handle.
const tokenPrefix = "tok"

// maxTokens bounds the tokens one response may issue (each is a write to the store).
const maxTokens = 100

// tokenMaker makes and checks handles: public IDs of the resource "tok", which no store maps.
var tokenMaker = func() *publicid.Maker {
	m, err := publicid.NewMaker(tokenPrefix)
	if err != nil {
		panic(err)
	}
	return m
}()

// pendingToken is an upstream's token value in a rebuilt body, waiting for its handle.
type pendingToken struct {
	at    int // offset in the output where the quoted handle goes
	value []byte
	ttl   time.Duration
	field string
}

// token records a declared token's upstream value (s, unquoted) for its handle. An empty value
// passes as it is: it continues nothing (the last page's cursor).
func (r *rewriter) token(t *routes.Type, field string, s []byte) error {
	if len(s) > t.MaxLen {
		return unsafe(field, "a token longer than %d bytes", t.MaxLen)
	}
	if len(s) == 0 {
		r.out = append(r.out, `""`...)
		return nil
	}
	if len(r.toks) == maxTokens {
		return unsafe(field, "more than %d tokens in one body", maxTokens)
	}
	if len(r.out)+64*(r.holes()+1) > r.maxOut {
		return unsafe(field, "the rebuilt body would pass %d bytes", r.maxOut)
	}
	r.toks = append(r.toks, pendingToken{at: len(r.out), value: bytes.Clone(s), ttl: t.TokenTTL(), field: field})
	return nil
}

// holes counts the values Fill writes in: public IDs and handles, each at most 64 bytes.
func (r *rewriter) holes() int { return len(r.ids) + len(r.toks) }

// newHandle makes a handle that the detector does not take for an internal ID (128 random bits
// in 62 letters and digits practically never look like one; it is checked all the same).
func (g *Gateway) newHandle() (string, error) {
	scan := g.detect.scanner()
	for range 5 {
		h, err := tokenMaker.New(tokenPrefix)
		if err != nil {
			return "", err
		}
		if scan.find([]byte(h)) == "" {
			return h, nil
		}
	}
	return "", errors.New("gateway: no handle that looks like no internal ID in 5 draws")
}

// fill fills in a rebuilt body (Fill) with its public IDs and with a new handle for each token
// (one handle for one value and ttl met twice), then keeps the tokens in the store: only a body
// that passed every check costs the store a write.
func (g *Gateway) fill(q *request, rw *Rewritten, pubs map[int64]string) ([]byte, error) {
	if len(rw.toks) == 0 {
		return rw.Fill(pubs, &q.known)
	}
	type key struct {
		value string
		ttl   time.Duration
	}
	first := map[key]int{} // a value's first token
	var keep []int         // the tokens to store: each value's first
	rw.handles = make([]string, len(rw.toks))
	for i, tk := range rw.toks {
		k := key{string(tk.value), tk.ttl}
		if j, ok := first[k]; ok {
			rw.handles[i] = rw.handles[j]
			continue
		}
		h, err := g.newHandle()
		if err != nil {
			return nil, err
		}
		first[k], rw.handles[i] = i, h
		keep = append(keep, i)
	}
	out, err := rw.Fill(pubs, &q.known)
	if err != nil {
		return nil, err
	}
	name := q.route.Name
	err = each(q.r.Context(), len(keep), func(ctx context.Context, n int) error {
		tk := rw.toks[keep[n]]
		return g.store.PutToken(ctx, rw.handles[keep[n]], tokenValue(name, tk.value), tk.ttl)
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: keep a token: %w", err)
	}
	g.tokens.WithLabelValues(name, "issued").Add(float64(len(keep)))
	return out, nil
}

// tokenValue is what the store keeps under a handle: the route's name (which holds no newline),
// a newline, and the upstream's value.
func tokenValue(route string, value []byte) []byte {
	b := make([]byte, 0, len(route)+1+len(value))
	return append(append(append(b, route...), '\n'), value...)
}

// redeem returns the upstream's value of the handle a customer sent in query parameter name, if
// it is one this route issued and it has not expired; anything else is the one refusal. An empty
// value passes as it is, as an empty token is given out.
func (g *Gateway) redeem(q *request, name, handle string) (string, *failure) {
	if handle == "" {
		return "", nil
	}
	route := q.route.Name
	refused := func() (string, *failure) {
		g.tokens.WithLabelValues(route, "refused").Inc()
		return "", badRequest("query parameter " + name + ": unknown or expired token")
	}
	if res, err := tokenMaker.Parse(handle); err != nil || res != tokenPrefix {
		return refused() // malformed: the store is never asked
	}
	ctx := q.r.Context()
	kept, err := g.store.GetToken(ctx, handle)
	switch {
	case errors.Is(err, mapping.ErrNotFound):
		return refused()
	case err != nil && ctx.Err() != nil:
		return "", fail(outcomeCanceled, err)
	case err != nil:
		return "", fail(outcomeStoreUnavailable, err)
	}
	value, ok := bytes.CutPrefix(kept, []byte(route+"\n"))
	if !ok {
		return refused() // another route's: this upstream never issued it
	}
	g.tokens.WithLabelValues(route, "redeemed").Inc()
	return string(value), nil
}
