package gateway

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/publicid"
)

// Tokens: a route's token fields (an upstream's page cursor, a continuation token) never reach
// the customer as the upstream wrote them, since upstreams put internal IDs in them (base64 of
// the last order's ID, say). The value is kept in the mapping store under a handle of the
// gateway's own, with the route's name; the customer gets the handle. A query parameter of type
// token takes a handle back: the upstream gets the value the handle was issued for, and only on
// the route that issued it. An unknown, expired, malformed or other route's handle is one answer,
// 400 "query parameter NAME: unknown or expired token", so probing learns nothing. The
// upstream's value is bounded by the field's max_len but never scanned: it reaches no customer.
//
// A handle is derived, not drawn: "tok_" and the first 128 bits of HMAC-SHA256, keyed with the
// gateways' secret (kept in the mapping store, created once and shared by every gateway of the
// store: Secret), of the route's name, the field's ttl, the number of the ttl/2 window the
// answer is made in, and the value, rendered in the public IDs' alphabet. So one value on one
// route gets one handle through a window, from every gateway: a page asked again and again has
// one body and one ETag (a 304 for If-None-Match), and costs the store one token per distinct
// value per window, however often it is asked: each GET still asks the store to keep its tokens
// (a put that never overwrites), and a later one in the window finds them kept (ErrTokenTaken)
// and writes nothing. The handle is kept for the full ttl from its first issue, so it lives at
// least ttl/2 after its last issue. Without the key nobody can compute a handle, nor test a guess of
// an upstream's value against one. The tokens are kept only after every check of the answer, its
// headers included, and never for a HEAD, which computes the same handles (for the same ETag and
// Content-Length) and writes nothing: its customer gets no body to redeem them from.

// tokenPrefix starts every handle.
const tokenPrefix = "tok"

// maxTokens bounds the tokens one response may issue (each is a write to the store); a route
// file whose response could hold more is refused at load (routes.MaxTokens), so this only holds
// the bound should a route be made some other way.
const maxTokens = routes.MaxTokens

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

// The gateways' key of handles: its name in the store's secrets, and its size.
const (
	tokenSecret  = "gateway-token-handles"
	tokenKeySize = 32
)

// tokenKey is the key of handles, read from the store (which creates it once) the first time a
// handle is needed, then kept.
func (g *Gateway) tokenKey(ctx context.Context) ([]byte, error) {
	if k := g.tokKey.Load(); k != nil {
		return *k, nil
	}
	k, err := g.store.Secret(ctx, tokenSecret, tokenKeySize)
	if err != nil {
		return nil, fmt.Errorf("gateway: the key of token handles: %w", err)
	}
	g.tokKey.Store(&k)
	return k, nil
}

// tokenWindow is the number of the ttl/2 window t falls in.
func tokenWindow(t time.Time, ttl time.Duration) int64 { return t.UnixNano() / int64(ttl/2) }

// handle is the handle of value on route for ttl in window: tok_ and the first 128 bits of the
// MAC of them, in the public IDs' alphabet. The MAC's input also numbers the attempt: a handle
// the detector takes for an internal ID (128 bits in 62 letters and digits practically never
// look like one; it is checked all the same) is derived again with the next number.
func (g *Gateway) handle(key []byte, route string, ttl time.Duration, window int64, value []byte) (string, error) {
	scan := g.detect.scanner()
	mac := hmac.New(sha256.New, key)
	var sum [sha256.Size]byte
	for attempt := range 5 {
		mac.Reset()
		var head [4 * 8]byte
		binary.BigEndian.PutUint64(head[0:], uint64(len(route)))
		binary.BigEndian.PutUint64(head[8:], uint64(ttl))
		binary.BigEndian.PutUint64(head[16:], uint64(window))
		binary.BigEndian.PutUint64(head[24:], uint64(attempt))
		mac.Write(head[:])
		mac.Write([]byte(route))
		mac.Write(value)
		h, err := tokenMaker.FromBits(tokenPrefix, [16]byte(mac.Sum(sum[:0])[:16]))
		if err != nil {
			return "", err
		}
		if scan.Find([]byte(h)) == "" {
			return h, nil
		}
	}
	return "", errors.New("gateway: no handle that looks like no internal ID in 5 attempts")
}

// tokenWrite is a token an answer gives out, to keep in the store once the answer passed every
// check (keepTokens).
type tokenWrite struct {
	handle string
	value  []byte
	ttl    time.Duration
}

// fill fills in a rebuilt body (Fill) with its public IDs and with the handle of each token (one
// handle for one value and ttl met twice), and returns the tokens to keep: each value's first.
func (g *Gateway) fill(q *request, rw *Rewritten, pubs map[int64]string) ([]byte, []tokenWrite, error) {
	if len(rw.toks) == 0 {
		out, err := rw.Fill(pubs, &q.known)
		return out, nil, err
	}
	key, err := g.tokenKey(q.r.Context())
	if err != nil {
		return nil, nil, err
	}
	type seen struct {
		value string
		ttl   time.Duration
	}
	first := map[seen]int{} // a value's first token
	var keep []tokenWrite
	now := g.now()
	rw.handles = make([]string, len(rw.toks))
	for i, tk := range rw.toks {
		k := seen{string(tk.value), tk.ttl}
		if j, ok := first[k]; ok {
			rw.handles[i] = rw.handles[j]
			continue
		}
		h, err := g.handle(key, q.route.Name, tk.ttl, tokenWindow(now, tk.ttl), tk.value)
		if err != nil {
			return nil, nil, err
		}
		first[k], rw.handles[i] = i, h
		keep = append(keep, tokenWrite{handle: h, value: tk.value, ttl: tk.ttl})
	}
	out, err := rw.Fill(pubs, &q.known)
	if err != nil {
		return nil, nil, err
	}
	return out, keep, nil
}

// keepTokens keeps an answer's tokens in the store, each for its full ttl, once the answer passed
// every check; a HEAD keeps none. A handle kept already (by an earlier answer in its window, here
// or at another gateway) is left as it is: ErrTokenTaken is no failure. idgen_gateway_tokens_total
// counts as issued the tokens this call kept.
func (g *Gateway) keepTokens(q *request, toks []tokenWrite) error {
	if len(toks) == 0 || q.r.Method == http.MethodHead {
		return nil
	}
	name := q.route.Name
	var kept atomic.Int64
	err := each(q.r.Context(), len(toks), func(ctx context.Context, n int) error {
		tk := toks[n]
		err := g.store.PutToken(ctx, tk.handle, tokenValue(name, tk.value), tk.ttl)
		switch {
		case err == nil:
			kept.Add(1)
		case errors.Is(err, mapping.ErrTokenTaken):
		default:
			return err
		}
		return nil
	})
	g.tokens.WithLabelValues(name, "issued").Add(float64(kept.Load()))
	if err != nil {
		return fmt.Errorf("gateway: keep a token: %w", err)
	}
	return nil
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
