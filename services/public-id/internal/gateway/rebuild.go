package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// firstChunk is the budget a body takes first; it doubles as the body grows, up to maxChunk at
// a time, so a trickling upstream holds about what it has sent.
const (
	firstChunk = 4 << 10
	maxChunk   = 64 << 10
)

// rebuild reads a 2xx upstream response and rebuilds it from the route's declarations: the body
// from its type, with public IDs, and the declared headers, checked against every internal ID
// of the response. The body is read within the body budget (no rewrite slot is held while an
// upstream sends), then rebuilt in a rewrite slot of the gateway and of the route, so the memory
// responses take is bounded whatever the upstreams send and however many customers ask, and a
// slow upstream holds nothing another route needs.
func (g *Gateway) rebuild(q *request, resp *http.Response) (*answer, *failure) {
	a, err := g.rebuilt(q, resp)
	if err != nil {
		return nil, refusal(q.r.Context(), err)
	}
	return a, nil
}

func (g *Gateway) rebuilt(q *request, resp *http.Response) (*answer, error) {
	route, lim := q.route, q.lim
	if resp.ContentLength > g.o.MaxBody {
		return nil, fmt.Errorf("%w: body larger than %d bytes", errUpstream, g.o.MaxBody)
	}
	raw, held, err := g.readBody(lim, resp.Body, resp.ContentLength)
	defer func() { g.giveBody(lim, held) }()
	if err != nil {
		return nil, err
	}
	code := resp.StatusCode
	var out []byte
	var toks []tokenWrite
	if len(bytes.TrimSpace(raw)) > 0 && code != http.StatusNoContent {
		if ct := resp.Header.Get("Content-Type"); ct != "" && !isJSON(ct) {
			return nil, unsafe("", "the upstream's body is not JSON")
		}
		if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
			return nil, unsafe("", "the upstream's body is encoded (Content-Encoding); the gateway asks for identity")
		}
		// The slot is held to the end: the rebuild, the headers' check, and the representation
		// (represent: its hash and its compression).
		if err := g.rewriteSlot(q.r.Context(), lim); err != nil {
			return nil, err
		}
		defer g.freeRewriteSlot(lim)
		if out, toks, err = g.rewrite(q, raw, &held); err != nil {
			return nil, err
		}
	}
	// Headers last: every internal ID of the response is known by now.
	headers, err := g.headers(q.r.Context(), route, resp.Header, &q.known)
	if err != nil {
		return nil, err
	}
	// The answer passed every check: only now do its tokens cost the store a write.
	if err := g.keepTokens(q, toks); err != nil {
		return nil, err
	}
	a := &answer{status: code, headers: headers, body: out}
	g.represent(q, a)
	return a, nil
}

// rewrite rebuilds a body, under the rewrite slot rebuilt holds: Rewrite, then the publish of the
// new IDs, then Fill (with the tokens' handles, token.go), and returns it with the tokens to keep
// once the answer passes its last checks. The upstream's body is given back to the budget once
// Rewrite has parsed it.
func (g *Gateway) rewrite(q *request, raw []byte, held *int64) ([]byte, []tokenWrite, error) {
	rw, err := Rewrite(raw, q.route.Response, g.detect, Limits{MaxDepth: g.o.MaxDepth, MaxIDs: 10 * g.o.MaxIDs, MaxOut: 4 * int(g.o.MaxBody)})
	g.giveBody(q.lim, *held) // the rebuilt body is apart from the upstream's, which goes now
	*held = 0
	if err != nil {
		return nil, nil, err
	}
	pubs, err := g.publish(q.r.Context(), rw.ids, &q.known)
	if err != nil {
		return nil, nil, err
	}
	return g.fill(q, rw, pubs)
}

// readBody reads an upstream body whole, taking the body budget of the route and of the gateway
// as it grows; the caller gives back held bytes (giveBody), whatever the error. A body that finds
// no room gets errBusy at once: waiting would let slow upstreams hold the budget longer still.
// A body declared shorter than the first chunk (length; -1 for none) takes only its length and
// the byte that reads its end.
func (g *Gateway) readBody(lim *routeLimits, body io.Reader, length int64) (buf []byte, held int64, err error) {
	limit := g.o.MaxBody + 1 // a byte more than allowed tells a body too large
	for {
		if int64(len(buf)) == held {
			if held == limit {
				return buf, held, fmt.Errorf("%w: body larger than %d bytes", errUpstream, g.o.MaxBody)
			}
			grow := min(max(held, firstChunk), maxChunk, limit-held)
			if held == 0 && length >= 0 && length < firstChunk {
				grow = min(length+1, limit)
			}
			if !lim.bodies.TryAcquire(grow) {
				return buf, held, errBusy
			}
			if !g.bodies.TryAcquire(grow) {
				lim.bodies.Release(grow)
				return buf, held, errBusy
			}
			lim.held.Add(float64(grow))
			next := make([]byte, len(buf), held+grow)
			copy(next, buf)
			buf, held = next, held+grow
		}
		n, err := body.Read(buf[len(buf):held])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, held, nil
		}
		if err != nil {
			return buf, held, fmt.Errorf("%w: %w", errUpstream, err)
		}
	}
}

// giveBody gives back a body's budget; the body must not be used after.
func (g *Gateway) giveBody(lim *routeLimits, held int64) {
	if held > 0 {
		g.bodies.Release(held)
		lim.bodies.Release(held)
		lim.held.Sub(float64(held))
	}
}

// rewriteSlot waits up to RewriteWait for a rewrite slot of the route, then of the gateway (so
// a route at its own limit holds none of the gateway's); freeRewriteSlot frees both.
func (g *Gateway) rewriteSlot(ctx context.Context, lim *routeLimits) error {
	// Both free (the common case): taken at once, with no timer to start and stop.
	select {
	case lim.rewrites <- struct{}{}:
		select {
		case g.rewrites <- struct{}{}:
			return nil
		default:
			<-lim.rewrites
		}
	default:
	}
	wait := time.NewTimer(g.o.RewriteWait)
	defer wait.Stop()
	select {
	case lim.rewrites <- struct{}{}:
	case <-wait.C:
		return errBusy
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case g.rewrites <- struct{}{}:
	case <-wait.C:
		<-lim.rewrites
		return errBusy
	case <-ctx.Done():
		<-lim.rewrites
		return ctx.Err()
	}
	return nil
}

func (g *Gateway) freeRewriteSlot(lim *routeLimits) { <-g.rewrites; <-lim.rewrites }

func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}
