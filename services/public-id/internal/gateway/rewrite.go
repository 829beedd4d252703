package gateway

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/routes"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/services/public-id/internal/scan"
)

// ErrUnsafe: an upstream response the gateway refuses to pass on (it would leak, or it breaks
// the route's declared type). The customer gets a 502; the log names the route and field.
var ErrUnsafe = errors.New("gateway: unsafe upstream response")

// UnsafeError says which field made a response unsafe, and why. It never holds the value.
type UnsafeError struct {
	Field  string // the declared field or header name; "" for the body as a whole
	Reason string
}

func (e *UnsafeError) Error() string {
	if e.Field == "" {
		return "gateway: unsafe upstream response: " + e.Reason
	}
	return "gateway: unsafe upstream response: field " + e.Field + ": " + e.Reason
}

// Unwrap makes errors.Is(err, ErrUnsafe) hold.
func (e *UnsafeError) Unwrap() error { return ErrUnsafe }

func unsafe(field, format string, args ...any) error {
	return &UnsafeError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Limits bound the work one response may cause.
type Limits struct {
	// MaxDepth bounds JSON nesting, declared or not. Default 64.
	MaxDepth int
	// MaxIDs bounds the id fields of one body, repeats included. Default 10,000.
	MaxIDs int
	// MaxOut bounds the rebuilt body's size in bytes. Default 4 MiB.
	MaxOut int
}

// pendingID is an internal ID of a declared id field, waiting for its public ID.
type pendingID struct {
	at       int // offset in the output where the quoted public ID goes
	id       int64
	resource string
	field    string
}

// span is a plain value written to the output, for naming the field of a late finding.
type span struct {
	start int
	field string
}

// normalized is a plain string whose normal form (Normalize) differs from it, kept so that Fill
// checks that form too: the output holds the string as it came, where an invisible character
// (written as an escape) can split a known ID that the normal form joins.
type normalized struct {
	text  []byte
	field string
}

// rewriter rebuilds one JSON body from its declared type, in one pass over the tokens.
type rewriter struct {
	dec      jsontext.Decoder
	out      []byte
	ids      []pendingID
	toks     []pendingToken
	spans    []span
	norms    []normalized
	scan     scan.Scanner
	maxDepth int
	maxIDs   int
	maxOut   int // with a public ID of at most 64 bytes for each id field
	scratch  []byte
	now      func() time.Time // the clock of a time's relative bounds: the detector's
}

// Rewritten is a body rebuilt from its declared type, its ID fields still to be filled in.
type Rewritten struct {
	out     []byte
	ids     []pendingID
	toks    []pendingToken // the token fields, for handles (token.go)
	handles []string       // each token's handle, set before Fill
	spans   []span
	norms   []normalized
}

// IDs returns the internal IDs of the declared id fields, in order, with their resources.
func (rw *Rewritten) IDs() (ids []int64, resources []string) {
	for _, p := range rw.ids {
		ids = append(ids, p.id)
		resources = append(resources, p.resource)
	}
	return ids, resources
}

// Rewrite parses body as one JSON value of type t and rebuilds it: declared members only (by
// exact name), each checked against its type; id fields are collected for Fill. A plain value
// that looks like an internal ID (Detector) makes the body unsafe, as does any break of the
// declared type, nesting deeper than the limit, or anything after the value.
func Rewrite(body []byte, t *routes.Type, d Detector, l Limits) (*Rewritten, error) {
	l.MaxDepth = cmp.Or(l.MaxDepth, 64)
	l.MaxIDs = cmp.Or(l.MaxIDs, 10_000)
	l.MaxOut = cmp.Or(l.MaxOut, 4<<20)
	r := &rewriter{scan: d.scanner(), maxDepth: l.MaxDepth, maxIDs: l.MaxIDs, maxOut: l.MaxOut, out: make([]byte, 0, min(len(body)+64, 4096))}
	r.dec.Reset(bytes.NewBuffer(body)) // a bytes.Buffer is parsed in place, without a copy
	if r.now = d.Now; r.now == nil {
		r.now = time.Now
	}
	if err := r.value(t, ""); err != nil {
		return nil, r.syntax(err)
	}
	if _, err := r.dec.ReadToken(); err == nil {
		return nil, unsafe("", "more than one JSON value")
	}
	return &Rewritten{out: r.out, ids: r.ids, toks: r.toks, spans: r.spans, norms: r.norms}, nil
}

// syntax turns the decoder's errors (which quote the input) into reasons that do not.
func (r *rewriter) syntax(err error) error {
	var ue *UnsafeError
	if errors.As(err, &ue) {
		return err
	}
	return unsafe("", "not valid JSON at byte %d", r.dec.InputOffset())
}

func (r *rewriter) value(t *routes.Type, field string) error {
	kind := r.dec.PeekKind()
	if kind == 'n' {
		if _, err := r.dec.ReadToken(); err != nil {
			return err
		}
		r.out = append(r.out, "null"...)
		return nil
	}
	if (kind == '{' || kind == '[') && r.dec.StackDepth() >= r.maxDepth {
		return unsafe(field, "nested deeper than %d", r.maxDepth)
	}
	switch t.Type {
	case "object":
		if kind != '{' {
			return unsafe(field, "want an object, got %s", apierr.KindWord(kind))
		}
		return r.object(t)
	case "array":
		if kind != '[' {
			return unsafe(field, "want an array, got %s", apierr.KindWord(kind))
		}
		return r.array(t, field)
	}
	v, err := r.dec.ReadValue()
	if err != nil {
		return err
	}
	return r.leaf(t, field, kind, v)
}

func (r *rewriter) object(t *routes.Type) error {
	if _, err := r.dec.ReadToken(); err != nil {
		return err
	}
	r.out = append(r.out, '{')
	first := true
	for r.dec.PeekKind() != '}' {
		name, err := r.dec.ReadValue()
		if err != nil {
			return err
		}
		f := t.Member(r.name(name))
		if f == nil {
			if err := r.skip(); err != nil { // undeclared: dropped
				return err
			}
			continue
		}
		if !first {
			r.out = append(r.out, ',')
		}
		first = false
		r.out = append(r.out, f.Quoted...)
		if err := r.value(f.Type, f.Name); err != nil {
			return err
		}
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return err
	}
	r.out = append(r.out, '}')
	return nil
}

// name returns an object member's name, unquoted (escapes resolved, so "\u0069d" is "id").
func (r *rewriter) name(quoted jsontext.Value) []byte {
	if len(quoted) >= 2 && bytes.IndexByte(quoted, '\\') < 0 {
		return quoted[1 : len(quoted)-1]
	}
	r.scratch, _ = jsontext.AppendUnquote(r.scratch[:0], quoted)
	return r.scratch
}

func (r *rewriter) array(t *routes.Type, field string) error {
	if _, err := r.dec.ReadToken(); err != nil {
		return err
	}
	r.out = append(r.out, '[')
	for n := 0; r.dec.PeekKind() != ']'; n++ {
		if n == t.MaxItems {
			return unsafe(field, "more than %d items", t.MaxItems)
		}
		if n > 0 {
			r.out = append(r.out, ',')
		}
		if err := r.value(t.Items, field); err != nil {
			return err
		}
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return err
	}
	r.out = append(r.out, ']')
	return nil
}

// skip reads past one undeclared value, holding it to the nesting limit.
func (r *rewriter) skip() error {
	start := r.dec.StackDepth()
	for {
		if k := r.dec.PeekKind(); (k == '{' || k == '[') && r.dec.StackDepth() >= r.maxDepth {
			return unsafe("", "nested deeper than %d", r.maxDepth)
		}
		if _, err := r.dec.ReadToken(); err != nil {
			return err
		}
		if r.dec.StackDepth() == start {
			return nil
		}
	}
}

func (r *rewriter) leaf(t *routes.Type, field string, kind jsontext.Kind, v jsontext.Value) error {
	switch t.Type {
	case "id":
		var s []byte
		switch kind {
		case '"':
			r.scratch, _ = jsontext.AppendUnquote(r.scratch[:0], v)
			s = r.scratch
		case '0':
			s = v
		default:
			return unsafe(field, "want an id, got %s", apierr.KindWord(kind))
		}
		id, err := idcore.ParseID(string(s))
		if err != nil {
			return unsafe(field, "want an id, got a value that is not one")
		}
		if len(r.ids) == r.maxIDs {
			return unsafe(field, "more than %d ids in one body", r.maxIDs)
		}
		if len(r.out)+64*(r.holes()+1) > r.maxOut {
			return unsafe(field, "the rebuilt body would pass %d bytes", r.maxOut)
		}
		r.ids = append(r.ids, pendingID{at: len(r.out), id: int64(id), resource: t.Resource, field: field})
		return nil
	case "token":
		// Never scanned and never written as it came: a handle takes its place (token.go).
		if kind != '"' {
			return unsafe(field, "want a token (a string), got %s", apierr.KindWord(kind))
		}
		r.scratch, _ = jsontext.AppendUnquote(r.scratch[:0], v)
		return r.token(t, field, r.scratch)
	case "string", "time", "enum":
		if kind != '"' {
			return unsafe(field, "want a string, got %s", apierr.KindWord(kind))
		}
		r.scratch, _ = jsontext.AppendUnquote(r.scratch[:0], v)
		s := r.scratch
		switch t.Type {
		case "string":
			if len(s) > t.MaxLen {
				return unsafe(field, "longer than %d bytes", t.MaxLen)
			}
			if !t.InCharset(s) {
				return unsafe(field, "outside the declared charset %s", t.Charset)
			}
			if !t.Matches(s) {
				return unsafe(field, "does not match the declared pattern")
			}
		case "time":
			ts, err := time.Parse(time.RFC3339Nano, string(s))
			if err != nil || !routes.FourDigitYear(ts) {
				return unsafe(field, "want an RFC 3339 time")
			}
			if t.HasTimeBounds() && !t.InTimeBounds(ts, r.now()) {
				return unsafe(field, "outside the declared bounds")
			}
			// Written anew in UTC at the declared precision: never the upstream's text, and no
			// digit finer than the route asks for (an ID's millisecond, by default).
			r.scratch = t.AppendTime(r.scratch[:0], ts)
			s = r.scratch
		case "enum":
			if !slices.Contains(t.Values, string(s)) {
				return unsafe(field, "not one of the declared values")
			}
		}
		if r.scan.Find(s) != "" {
			return unsafe(field, "a plain field holds an internal ID")
		}
		if n, changed := scan.Normalize(s); changed {
			r.norms = append(r.norms, normalized{bytes.Clone(n), field})
		}
		r.span(field, len(s))
		// Written anew, so that no escape (\u0031 for "1") can hide digits from a later scan.
		r.out, _ = jsontext.AppendQuote(r.out, s)
		if len(r.out)+64*r.holes() > r.maxOut {
			return unsafe(field, "the rebuilt body would pass %d bytes", r.maxOut)
		}
		return nil
	case "int":
		if kind != '0' {
			return unsafe(field, "want an integer, got %s", apierr.KindWord(kind))
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return unsafe(field, "want a 64-bit integer")
		}
		if !t.InBounds(n) {
			return unsafe(field, "outside the declared bounds")
		}
		if r.scan.Plausible(n) || n < 0 && r.scan.Plausible(-n) || r.scan.Find(v) != "" { // or its digits inside a longer number (the ID times ten)
			return unsafe(field, "a plain field holds an internal ID")
		}
	case "number":
		if kind != '0' {
			return unsafe(field, "want a number, got %s", apierr.KindWord(kind))
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return unsafe(field, "want a number")
		}
		if !t.InNumberBounds(f) {
			return unsafe(field, "outside the declared bounds")
		}
		if t.Decimals != nil {
			if !t.InDecimals(f) {
				return unsafe(field, "more than the declared %d decimals", *t.Decimals)
			}
			// Written anew, so that its spelling (1.50, 15e-1) carries nothing beyond its value.
			r.scratch = routes.AppendNumber(r.scratch[:0], f)
			v = r.scratch
		}
		if r.scan.PlausibleFloat(f) || r.scan.Find(v) != "" { // 1.2e17, or the digits of one in a fraction
			return unsafe(field, "a plain field holds an internal ID")
		}
	case "bool":
		if kind != 't' && kind != 'f' {
			return unsafe(field, "want a boolean, got %s", apierr.KindWord(kind))
		}
	default:
		return unsafe(field, "type %s is not one the gateway rebuilds", t.Type)
	}
	r.span(field, len(v))
	r.out = append(r.out, v...)
	if len(r.out)+64*r.holes() > r.maxOut {
		return unsafe(field, "the rebuilt body would pass %d bytes", r.maxOut)
	}
	return nil
}

// span records where a plain value starts, for naming its field if a known ID turns up in it
// later. Values too short to hold one (Known keeps forms of 6 characters or more) need none.
func (r *rewriter) span(field string, n int) {
	if n >= 6 {
		r.spans = append(r.spans, span{len(r.out), field})
	}
}

// Fill returns the body with the public ID of each id field in place, and the handle of each
// token field (set by the gateway before; a body with tokens and no handles is unsafe). pubs maps
// each internal ID to its public ID. known lists internal IDs the response must not show in any
// form (the ids of the request and of the id fields); a plain value that holds one, in decimal or
// hexadecimal, as a whole or inside a longer run, makes the body unsafe.
func (rw *Rewritten) Fill(pubs map[int64]string, known *Known) ([]byte, error) {
	if at := known.Find(rw.out); at >= 0 {
		return nil, unsafe(rw.fieldAt(at), "a plain field holds an internal ID of this response")
	}
	for _, n := range rw.norms {
		if known.Find(n.text) >= 0 {
			return nil, unsafe(n.field, "a plain field holds an internal ID of this response")
		}
	}
	if len(rw.handles) != len(rw.toks) {
		return nil, unsafe(rw.toks[0].field, "no token handle")
	}
	out := make([]byte, 0, len(rw.out)+(len(rw.ids)+len(rw.toks))*32)
	prev := 0
	// The IDs and the tokens, each in the order of the body, filled in in the body's order.
	for i, j := 0, 0; i < len(rw.ids) || j < len(rw.toks); {
		var at int
		var v string
		if j == len(rw.toks) || i < len(rw.ids) && rw.ids[i].at <= rw.toks[j].at {
			p := rw.ids[i]
			pub, ok := pubs[p.id]
			if !ok {
				return nil, unsafe(p.field, "no public id")
			}
			at, v = p.at, pub
			i++
		} else {
			at, v = rw.toks[j].at, rw.handles[j]
			j++
		}
		out = append(out, rw.out[prev:at]...)
		out = appendQuoted(out, v)
		prev = at
	}
	return append(out, rw.out[prev:]...), nil
}

// appendQuoted appends s quoted as strconv.AppendQuote does; a public ID (printable ASCII with
// no quote or backslash) is copied between its quotes as it is, without strconv's look at each
// character's Unicode class.
func appendQuoted(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return strconv.AppendQuote(dst, s)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

func (rw *Rewritten) fieldAt(at int) string {
	i, _ := slices.BinarySearchFunc(rw.spans, at, func(s span, at int) int { return s.start - at })
	if i == len(rw.spans) || rw.spans[i].start > at {
		i--
	}
	if i < 0 {
		return ""
	}
	return rw.spans[i].field
}
