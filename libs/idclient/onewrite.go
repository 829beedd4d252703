package idclient

import (
	"bytes"
	"io"
	"net/http"
)

// maxOneWrite is the largest request body OneWrite buffers.
const maxOneWrite = 64 << 10

// OneWrite wraps an HTTP/1.1 transport so that a small request body of known length goes out in
// the same write as the request's headers.
//
// net/http flushes the headers on their own before any body it does not recognize as in memory
// (a *bytes.Reader, *bytes.Buffer or *strings.Reader), and connect-go hands it its own buffer
// type; so each unary Connect call over HTTP/1.1 costs two TCP segments, and the server an
// extra read and wake-up. OneWrite reads such a body (it is in memory already) and passes it on
// as a *bytes.Reader. Other requests pass through unchanged.
func OneWrite(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return oneWrite{base}
}

type oneWrite struct{ base http.RoundTripper }

func (t oneWrite) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength <= 0 || r.ContentLength > maxOneWrite {
		return t.base.RoundTrip(r)
	}
	b := make([]byte, r.ContentLength)
	_, err := io.ReadFull(r.Body, b)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r2 := *r // a RoundTripper must not change the caller's request
	r2.Body = io.NopCloser(bytes.NewReader(b))
	r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return t.base.RoundTrip(&r2)
}
