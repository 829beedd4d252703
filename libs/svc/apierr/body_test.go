package apierr_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/idgen/idgen/libs/svc/apierr"
)

// TestDecodeBody: a body of exactly the limit is decoded, one byte more is a 413 naming the limit,
// a body that cannot be read is a 400, and what a decode keeps is its own: a later call, reading
// into the same kept buffer, does not change it.
func TestDecodeBody(t *testing.T) {
	type req struct {
		Raw jsontext.Value `json:"raw"`
		S   string         `json:"s"`
	}
	body := func(n int) string { // a JSON object of exactly n bytes
		const frame = `{"s":""}`
		return `{"s":"` + strings.Repeat("x", n-len(frame)) + `"}`
	}
	const limit = 1000
	var r req
	if err := apierr.DecodeBody(strings.NewReader(body(limit)), limit, &r); err != nil || len(r.S) != limit-8 {
		t.Fatalf("a body of the limit: %v, %d bytes of s", err, len(r.S))
	}
	var e *apierr.Error
	if err := apierr.DecodeBody(strings.NewReader(body(limit+1)), limit, &r); !errors.As(err, &e) || e.Status != http.StatusRequestEntityTooLarge ||
		!strings.Contains(e.Msg, "1000 bytes") {
		t.Fatalf("a body one byte over the limit: %v", err)
	}
	// Read a byte at a time: the reading loop, not one Read, finds the end and the limit.
	if err := apierr.DecodeBody(iotest.OneByteReader(strings.NewReader(body(limit+1))), limit, &r); !errors.As(err, &e) || e.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("one byte at a time, over the limit: %v", err)
	}
	if err := apierr.DecodeBody(iotest.OneByteReader(strings.NewReader(`{"s":"ok"}`)), limit, &r); err != nil || r.S != "ok" {
		t.Fatalf("one byte at a time: %v, %q", err, r.S)
	}
	if err := apierr.DecodeBody(iotest.ErrReader(io.ErrUnexpectedEOF), limit, &r); !errors.As(err, &e) || e.Status != http.StatusBadRequest ||
		!strings.Contains(e.Msg, "reading the body") {
		t.Fatalf("a body that cannot be read: %v", err)
	}
	var first req
	if err := apierr.DecodeBody(strings.NewReader(`{"raw":{"a":1},"s":"first"}`), limit, &first); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		var later req
		if err := apierr.DecodeBody(strings.NewReader(`{"raw":{"b":2},"s":"later"}`), limit, &later); err != nil {
			t.Fatal(err)
		}
	}
	if string(first.Raw) != `{"a":1}` || first.S != "first" {
		t.Fatalf("a decoded value changed under later calls: %s %q", first.Raw, first.S)
	}
}
