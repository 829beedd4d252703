package server

import (
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/healthz"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/labstack/echo/v4"
)

// rest is the internal REST API (docs/api.md#public-id-api) on echo, with every service's error
// handler: errors are {"error": message, "reason": name}; a POST whose Content-Type is not JSON
// gets 415, and every GET route answers HEAD (serve.REST).
func (s *Server) rest() http.Handler {
	e := serve.REST(s.metrics, errs)
	e.GET("/healthz", s.getHealthz)
	e.POST("/v1/public-ids", func(c echo.Context) error {
		var req struct {
			InternalID *idcore.ID `json:"internal_id"`
			Resource   string     `json:"resource"`
		}
		bp := bodyBufs.Get().(*[]byte)
		defer bodyBufs.Put(bp)
		b, err := readBody(c.Request().Body, (*bp)[:0])
		if err != nil {
			return err
		}
		if err := apierr.DecodeJSON(b, &req); err != nil {
			return err
		}
		if req.InternalID == nil {
			return apierr.BadRequest(`"internal_id" is missing: want {"internal_id": "<decimal id>"}`)
		}
		pub, err := s.publish(c.Request().Context(), int64(*req.InternalID), req.Resource)
		if err != nil {
			return err
		}
		return writeJSON(c, strconv.AppendQuote(append(b[:0], `{"public_id":`...), pub), "}")
	})
	e.GET("/v1/public-ids/:public_id", func(c echo.Context) error {
		in, err := s.resolve(c.Request().Context(), c.Param("public_id"))
		if err != nil {
			return err
		}
		var buf [48]byte // {"internal_id":"…"} with at most 19 digits
		return writeJSON(c, strconv.AppendInt(append(buf[:0], `{"internal_id":"`...), in, 10), `"}`)
	})
	return e
}

// writeJSON answers 200 with the JSON body b followed by end, as echo's JSONBlob would, with the
// Content-Type header's key given canonical and its value shared (JSONBlob looks the key up,
// then sets it with a slice of its own).
func writeJSON(c echo.Context, b []byte, end string) error {
	w := c.Response()
	w.Header()[echo.HeaderContentType] = jsonType
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(append(b, end...))
	return err
}

// jsonType is the Content-Type header's value of a JSON answer, shared: net/http and echo replace
// a header's values, never write into them.
var jsonType = []string{echo.MIMEApplicationJSON}

// readBody reads a request body of at most maxBody bytes into buf (apierr.DecodeBody's limit and
// answers, without a buffer of its own each time: decoding copies what it keeps).
func readBody(r io.Reader, buf []byte) ([]byte, error) {
	for len(buf) < cap(buf) {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, apierr.BadRequest("reading the body: %v", err)
		}
	}
	if len(buf) > maxBody {
		return nil, apierr.TooLarge(maxBody)
	}
	return buf, nil
}

// bodyBufs holds request-body buffers of maxBody+1 bytes: one byte more than a body may have, to
// tell a body at the limit from a larger one.
var bodyBufs = sync.Pool{New: func() any { b := make([]byte, 0, maxBody+1); return &b }}

// getHealthz answers 200; 503 draining from the start of a shutdown (while the API still
// serves), and 503 once the server certificate in use has expired; 200 "degraded"
// (store_volatile) while the mapping store is volatile; 503 region_filling while this region's
// store is being filled from the other regions (--store regions:FILE).
func (s *Server) getHealthz(c echo.Context) error {
	if s.health.Draining() {
		return c.JSON(http.StatusServiceUnavailable, healthz.Draining)
	}
	if err := s.gate.CertificateProblem(); err != nil {
		return c.JSON(http.StatusServiceUnavailable, healthz.Unavailable(auth.ReasonCertificate, err.Error()))
	}
	if h := s.store.Ready(c.Request().Context()); h != nil {
		return c.JSON(http.StatusServiceUnavailable, h)
	}
	if h := s.store.Health(); h != nil {
		return c.JSON(http.StatusOK, h)
	}
	return c.JSON(http.StatusOK, healthz.OK)
}
