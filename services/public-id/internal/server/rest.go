package server

import (
	"net/http"
	"strconv"

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
		if err := apierr.DecodeBody(c.Request().Body, maxBody, &req); err != nil {
			return err
		}
		if req.InternalID == nil {
			return apierr.BadRequest(`"internal_id" is missing: want {"internal_id": "<decimal id>"}`)
		}
		pub, err := s.publish(c.Request().Context(), int64(*req.InternalID), req.Resource)
		if err != nil {
			return err
		}
		var buf [64]byte // {"public_id":"…"}
		return writeJSON(c, strconv.AppendQuote(append(buf[:0], `{"public_id":`...), pub), "}")
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
