package apierr

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"connectrpc.com/connect"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// TooLarge is a 413 for a body over limit bytes (Connect: resource_exhausted, never with a
// Retry-After: waiting does not make the body smaller).
func TooLarge(limit int) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: connect.CodeResourceExhausted, Reason: "too_large",
		Msg: fmt.Sprintf("the body is larger than the limit of %d bytes", limit)}
}

// UnsupportedMediaType is a 415 for a request body that is not JSON (mediaType is what it was
// sent as, "" when its Content-Type did not parse). Counted as invalid_argument: the caller sent
// the wrong thing.
func UnsupportedMediaType(mediaType string) *Error {
	msg := "the body must be JSON: send it with Content-Type: application/json"
	if mediaType != "" {
		msg += ", not " + mediaType
	}
	return &Error{Status: http.StatusUnsupportedMediaType, Code: connect.CodeInvalidArgument, Reason: "unsupported_media_type", Msg: msg}
}

// bodyError says what is wrong with a JSON body in words a caller can act on: the field, and
// what it must be; never a Go type.
func bodyError(b []byte, err error) error {
	var se *jsonv2.SemanticError
	var syn *jsontext.SyntacticError
	switch {
	case errors.As(err, &se):
		field := strings.TrimPrefix(string(se.JSONPointer), "/")
		switch {
		case errors.Is(se.Err, jsonv2.ErrUnknownName):
			return BadRequest("unknown field %q (names are case-sensitive)", field)
		case se.GoType != nil && field != "":
			kind := se.GoType.Kind().String()
			if se.GoType.Kind().String() == "ptr" {
				kind = se.GoType.Elem().Kind().String()
			}
			return BadRequest("field %q must be %s, got %s", field, jsonKind(kind), KindWord(se.JSONKind))
		}
		if se.JSONKind != jsontext.KindInvalid && se.JSONKind != '{' {
			return BadRequest("the body must be a JSON object, not %s", KindWord(se.JSONKind))
		}
		return BadRequest("the body must be a JSON object")
	case errors.As(err, &syn):
		if errors.Is(syn.Err, jsontext.ErrDuplicateName) {
			return BadRequest("a field is given twice (at byte %d)", syn.ByteOffset)
		}
		if strings.Contains(syn.Err.Error(), "after top-level value") {
			if off := int(syn.ByteOffset); off < len(b) && strings.IndexByte(`{["-0123456789tfn`, b[off]) >= 0 {
				return BadRequest("the body holds more than one JSON value")
			}
			return BadRequest("the body holds more than its JSON object (at byte %d)", syn.ByteOffset)
		}
		return BadRequest("the body is not a valid JSON object (at byte %d)", syn.ByteOffset)
	}
	return BadRequest("the body is not a valid JSON object")
}

// KindWord names a JSON value's kind for a message: "a string", "an object", "null", and "no
// value" where there is none.
func KindWord(k jsontext.Kind) string {
	switch k {
	case jsontext.KindInvalid:
		return "no value"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "something else"
}

// DecodeBody reads a JSON object body of at most limit bytes into v (see DecodeJSON); a larger
// body is a 413 that names the limit. The body is read into a buffer kept between calls
// (decoding copies what it keeps), so a request costs no buffer of its own.
func DecodeBody(r io.Reader, limit int, v any) error {
	bp := bodyBufs.Get().(*[]byte)
	b, err := readBody(r, (*bp)[:0], limit)
	if err == nil {
		err = DecodeJSON(b, v)
	}
	if cap(b) <= maxPooledBody {
		*bp = b[:0]
		bodyBufs.Put(bp)
	}
	return err
}

// readBody appends what r holds to b, at most limit bytes: 400 when r cannot be read, 413 when it
// holds more.
func readBody(r io.Reader, b []byte, limit int) ([]byte, error) {
	for {
		if len(b) > limit {
			return b, TooLarge(limit)
		}
		if len(b) == cap(b) {
			b = slices.Grow(b, 512)
		}
		n, err := r.Read(b[len(b):min(cap(b), limit+1)])
		b = b[:len(b)+n]
		if err == io.EOF {
			if len(b) > limit {
				return b, TooLarge(limit)
			}
			return b, nil
		}
		if err != nil {
			return b, BadRequest("reading the body: %v", err)
		}
	}
}

// bodyBufs holds DecodeBody's buffers; one that grew past maxPooledBody is not kept.
var bodyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledBody = 64 << 10

// DecodeJSON decodes a JSON object into v the one way every service does: the body is one JSON
// object and nothing else (null, another kind of value, or bytes after the object are refused),
// field names match exactly ({"COUNT": 2} is not {"count": 2}), unknown and repeated fields are
// refused by name, and errors say what is wrong in words a caller can act on, never a Go type.
func DecodeJSON(b []byte, v any) error {
	if err := jsonv2.Unmarshal(b, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return bodyError(b, err)
	}
	// b is one valid JSON value, so its first byte past whitespace says its kind: a struct also
	// takes null (as nothing), a map or an interface any kind.
	if k := firstKind(b); k != '{' {
		return BadRequest("the body must be a JSON object, not %s", KindWord(k))
	}
	return nil
}

// firstKind is the kind of the JSON value that b, valid JSON, holds.
func firstKind(b []byte) jsontext.Kind {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return '0'
		}
		return jsontext.Kind(c)
	}
	return jsontext.KindInvalid
}

func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"):
		return "an integer"
	case k == "ptr", k == "struct", k == "map":
		return "an object"
	case k == "slice":
		return "an array"
	}
	return "a " + k
}
