package gateway

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// represent makes a rebuilt body the representation the customer gets, in the rewrite slot that
// rebuilt it (so the gateway compresses at most MaxRewrites bodies at once), after every check of
// the body and the headers:
//
//   - Vary: Accept-Encoding, on every rebuilt answer with a body (the gateway's own answers, never
//     compressed and no-store, carry none: no cache keeps one to choose by it);
//   - gzip (encoding) when the customer accepts it, with the body and its newline compressed into
//     a pooled buffer no larger than the body: a gzip body that would not be smaller is not sent;
//   - on a 200 to a GET or a HEAD, the gateway's own ETag, a strong hash of the body as sent
//     uncompressed ("…", 22 characters of base64url of SHA-256's first 16 bytes), in place of any
//     ETag the route declares: the upstream's tags its own body, not the one the gateway rebuilt.
//     A body sent gzip carries it weak (W/"…"): the same content, not the same bytes. If-None-Match
//     naming it (either form, * or in a list; weak comparison, RFC 9110 13.1.2) gets 304 with no
//     body, and the ETag the 200 would carry: it is evaluated once the encoding is decided.
func (g *Gateway) represent(q *request, a *answer) {
	if a.body == nil {
		return
	}
	if a.headers == nil {
		a.headers = http.Header{}
	}
	h := a.headers
	h["Vary"] = varyEncoding
	size := len(a.body) + 1
	var tag string
	if a.status == http.StatusOK && (q.r.Method == http.MethodGet || q.r.Method == http.MethodHead) {
		sum := sha256.New()
		sum.Write(a.body)
		sum.Write(newline)
		var b [sha256.Size]byte
		var t [2 + etagLen]byte // the quoted tag, written in place: one string
		t[0], t[len(t)-1] = '"', '"'
		base64.RawURLEncoding.Encode(t[1:len(t)-1], sum.Sum(b[:0])[:16])
		tag = string(t[:])
	}
	if gz, identity := g.encoding(q, size); gz {
		limit := size // never more than the body
		if !identity {
			limit = size + size>>8 + 64 // the customer takes gzip only: deflate's worst case
		}
		if buf, ok := compress(a.body, limit); ok {
			a.body, a.encoded, a.pooled = *buf, true, buf
			h["Content-Encoding"] = gzipEncoding
		}
	}
	if tag == "" {
		return
	}
	if a.encoded {
		h["Etag"] = []string{"W/" + tag}
	} else {
		h["Etag"] = []string{tag}
	}
	if noneMatch(q.r.Header["If-None-Match"], tag) {
		if a.pooled != nil {
			putBuffer(a.pooled)
		}
		delete(h, "Content-Encoding")
		a.status, a.body, a.encoded, a.pooled = http.StatusNotModified, nil, false, nil
	}
}

// etagLen is the length of an ETag's hash: 16 bytes in unpadded base64.
const etagLen = 22

var (
	varyEncoding = []string{"Accept-Encoding"}
	gzipEncoding = []string{"gzip"}
)

// encoding tells whether an answer of size bytes goes gzip to q, and whether q accepts it
// uncompressed: gzip when Accept-Encoding gives gzip (or x-gzip, or *) a q-value above 0 and not
// below identity's, and the body is at least CompressMinSize bytes, or whatever its size when
// identity is refused (identity;q=0, or *;q=0 without identity). Never with compression off.
func (g *Gateway) encoding(q *request, size int) (gz, identity bool) {
	c := q.codings()
	identity = c.identityQ > 0
	if g.o.CompressMinSize < 0 || c.gzipQ <= 0 {
		return false, identity
	}
	return !identity || (!c.listed || c.gzipQ >= c.identityQ) && size >= g.o.CompressMinSize, identity
}

// acceptable refuses, before the upstream is asked, a request whose Accept-Encoding refuses both
// what the gateway can send: identity and gzip (406, counted bad_request).
func (g *Gateway) acceptable(q *request) *failure {
	c := q.codings()
	if c.identityQ > 0 || c.gzipQ > 0 && g.o.CompressMinSize >= 0 {
		return nil
	}
	enc := "identity"
	if g.o.CompressMinSize >= 0 {
		enc = "gzip or identity"
	}
	return &failure{outcome: outcomeBadRequest, status: http.StatusNotAcceptable,
		msg: "Accept-Encoding refuses every coding the gateway sends: " + enc}
}

// codings is q's Accept-Encoding as acceptEncoding reads it, read once for acceptable and
// encoding.
func (q *request) codings() codings {
	if !q.enc.read {
		q.enc.gzipQ, q.enc.identityQ, q.enc.listed = acceptEncoding(q.r.Header["Accept-Encoding"])
		q.enc.read = true
	}
	return q.enc
}

// codings are the q-values of a request's Accept-Encoding (acceptEncoding).
type codings struct {
	gzipQ, identityQ float64
	listed           bool
	read             bool // the header has been read
}

// preconditions refuses, before the upstream is asked, a request with a precondition the gateway
// cannot evaluate and does not pass upstream (only Accept, Accept-Encoding and X-Request-Id go
// there): If-Match and If-Unmodified-Since on any method, If-None-Match on a method other than GET
// and HEAD (on those the gateway evaluates it against its own ETag: represent). Served without
// it, a conditional DELETE would delete unconditionally (RFC 9110 13.1), so it gets 412 (counted
// bad_request) saying so. It is checked once the route and its public ID are known, so an
// unknown one still gets its 404 (13.2.1).
func preconditions(r *http.Request) *failure {
	name := ""
	switch {
	case len(r.Header["If-Match"]) > 0:
		name = "If-Match"
	case len(r.Header["If-Unmodified-Since"]) > 0:
		name = "If-Unmodified-Since"
	case len(r.Header["If-None-Match"]) > 0 && r.Method != http.MethodGet && r.Method != http.MethodHead:
		name = "If-None-Match"
	default:
		return nil
	}
	return &failure{outcome: outcomeBadRequest, status: http.StatusPreconditionFailed,
		msg: name + ": the gateway does not pass preconditions to the upstream; send the request without it"}
}

// acceptEncoding reads the q-values of gzip and identity from Accept-Encoding (RFC 9110 12.5.3):
// a coding not listed takes *'s, if listed; identity not listed is acceptable (1, and listed
// false: it is preferred to nothing) unless * says otherwise, gzip not listed 0. A q-value that
// is not a number from 0 to 1 drops its element. Without the header, identity only.
func acceptEncoding(values []string) (gzipQ, identityQ float64, listed bool) {
	gzipQ, identityQ, starQ := -1.0, -1.0, -1.0
	for _, v := range values {
		for elem := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(elem, ";")
			q := 1.0
			for p := range strings.SplitSeq(params, ";") {
				name, val, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(strings.TrimSpace(name), "q") {
					f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
					if err != nil || !(f >= 0 && f <= 1) {
						f = -1
					}
					q = f
				}
			}
			if q < 0 {
				continue
			}
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "gzip", "x-gzip":
				gzipQ = max(gzipQ, q)
			case "identity":
				identityQ = max(identityQ, q)
			case "*":
				starQ = max(starQ, q)
			}
		}
	}
	if gzipQ < 0 {
		gzipQ = max(starQ, 0)
	}
	listed = identityQ >= 0 || starQ >= 0
	switch {
	case identityQ >= 0:
	case starQ >= 0:
		identityQ = starQ
	default:
		identityQ = 1
	}
	return gzipQ, identityQ, listed
}

// noneMatch tells whether If-None-Match (its values) names tag ("…", strong) by weak comparison:
// W/"…" and "…" alike, in a list or as *. A malformed value names nothing from where it breaks.
func noneMatch(values []string, tag string) bool {
	for _, v := range values {
		for s := v; ; {
			s = strings.TrimLeft(s, " \t,")
			if s == "" {
				break
			}
			if s[0] == '*' {
				return true
			}
			s = strings.TrimPrefix(s, "W/")
			if s == "" || s[0] != '"' {
				break
			}
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				break
			}
			if s[:end+2] == tag {
				return true
			}
			s = s[end+2:]
		}
	}
	return false
}

// gzipWriters are the gzip writers, in klauspost/compress's stateless mode: about 1.6 KB of state
// each where compress/gzip's take 800 KB, for the same size of JSON bodies (1 MiB of an order's
// items to 97 KiB). compressBufs are the buffers of gzip bodies, up to maxPooledBuf bytes.
var (
	gzipWriters  = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.StatelessCompression); return w }}
	compressBufs sync.Pool
)

const maxPooledBuf = 1 << 20

// compress is body and its newline gzipped, in a pooled buffer of at most limit bytes; false when
// it does not fit.
func compress(body []byte, limit int) (*[]byte, bool) {
	buf, _ := compressBufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	out := &cappedBuffer{b: (*buf)[:0], limit: limit}
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(out)
	_, err := zw.Write(body)
	if err == nil {
		_, err = zw.Write(newline)
	}
	if err == nil {
		err = zw.Close()
	}
	zw.Reset(nil)
	gzipWriters.Put(zw)
	*buf = out.b
	if err != nil {
		putBuffer(buf)
		return nil, false
	}
	return buf, true
}

// putBuffer gives a gzip body's buffer back, once written.
func putBuffer(buf *[]byte) {
	if cap(*buf) <= maxPooledBuf {
		*buf = (*buf)[:0]
		compressBufs.Put(buf)
	}
}

// cappedBuffer is an io.Writer into b that grows it to limit bytes at most.
type cappedBuffer struct {
	b     []byte
	limit int
}

var errTooLarge = errors.New("gateway: gzip body larger than the body")

func (c *cappedBuffer) Write(p []byte) (int, error) {
	n := len(c.b) + len(p)
	if n > c.limit {
		return 0, errTooLarge
	}
	if n > cap(c.b) {
		next := make([]byte, len(c.b), min(max(2*cap(c.b), n, 4<<10), c.limit))
		copy(next, c.b)
		c.b = next
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

// cacheControl sets a successful answer's Cache-Control when the upstream gave none the route
// declares: on a 200 or a 203 (and a 304 made of a 200), the route's cache_control, else
// CacheControl (default "private, no-cache": a shared cache never keeps a customer's answer, and
// the customer's own revalidates it each time, which the ETag makes a 304); on any other status
// (a redirect, a 204, a 201 or 202 to a DELETE) no-store, since what a route declares is for its
// representations, and a cached redirect or empty answer would outlive what the upstream meant.
// The gateway's errors are no-store (failed).
func (g *Gateway) cacheControl(q *request, a *answer) {
	if len(a.headers["Cache-Control"]) > 0 {
		return
	}
	if a.headers == nil {
		a.headers = http.Header{}
	}
	v := noStore
	switch a.status {
	case http.StatusOK, http.StatusNonAuthoritativeInfo, http.StatusNotModified:
		v = g.cacheDefault
		if q.route != nil && q.route.CacheControl != "" {
			v = []string{q.route.CacheControl}
		}
	}
	a.headers["Cache-Control"] = v
}

var noStore = []string{"no-store"}
