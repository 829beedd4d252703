// Package gateway is the customer gateway: it maps public URLs to internal upstreams, translating
// public IDs in, and rewrites the named JSON fields of every response from internal IDs to public
// IDs on the way out. No response to a customer carries an internal ID in a named field: a value
// it cannot rewrite turns the whole response into a 502.
package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/idgen/idgen/libs/idcore"
)

// ErrUnrewritable: a named field holds something that is not an ID (an object, a boolean, a
// non-numeric string), so the response cannot be made safe.
var ErrUnrewritable = errors.New("gateway: a named field holds a value that is not an ID")

// Publisher turns an internal ID into the public ID of a resource.
type Publisher func(internal int64, resource string) (string, error)

// Rewrite parses body as JSON and replaces, at any depth, the value of every object key named in
// fields (key → resource prefix) with public IDs: a string or number ID becomes a public ID string,
// an array of IDs an array of public ID strings, null stays null. Key order and other values are
// kept as they were.
func Rewrite(body []byte, fields map[string]string, publish Publisher) ([]byte, error) {
	v, err := parseOrdered(body)
	if err != nil {
		return nil, fmt.Errorf("gateway: upstream body is not one JSON value: %w", err)
	}
	var out bytes.Buffer
	if err := write(&out, v, fields, publish, ""); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// write encodes v, rewriting the values of named keys. Objects are re-encoded key by key in the
// order the decoder saw them, so the output is deterministic for a given input.
func write(out *bytes.Buffer, v any, fields map[string]string, publish Publisher, resource string) error {
	if resource != "" {
		return writeID(out, v, publish, resource)
	}
	switch x := v.(type) {
	case orderedObject:
		out.WriteByte('{')
		for i, kv := range x {
			if i > 0 {
				out.WriteByte(',')
			}
			kb, _ := json.Marshal(kv.key)
			out.Write(kb)
			out.WriteByte(':')
			if err := write(out, kv.val, fields, publish, fields[kv.key]); err != nil {
				return err
			}
		}
		out.WriteByte('}')
	case []any:
		out.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := write(out, e, fields, publish, ""); err != nil {
				return err
			}
		}
		out.WriteByte(']')
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return err
		}
		out.Write(b)
	}
	return nil
}

func writeID(out *bytes.Buffer, v any, publish Publisher, resource string) error {
	var s string
	switch x := v.(type) {
	case nil:
		out.WriteString("null")
		return nil
	case []any:
		out.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := writeID(out, e, publish, resource); err != nil {
				return err
			}
		}
		out.WriteByte(']')
		return nil
	case json.Number:
		s = x.String()
	case string:
		s = x
	default:
		return fmt.Errorf("%w (%T)", ErrUnrewritable, v)
	}
	id, err := idcore.ParseID(s)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrUnrewritable, s)
	}
	pub, err := publish(int64(id), resource)
	if err != nil {
		return err
	}
	out.WriteString(strconv.Quote(pub))
	return nil
}
