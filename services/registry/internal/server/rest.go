package server

import (
	"net/http"
	"strings"

	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/healthz"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/labstack/echo/v4"
)

// rest is the REST API (docs/api.md#registry-api) on echo, with every service's error handler:
// errors are {"error": message, "reason": name}; a POST whose Content-Type is not JSON gets 415
// (a retire too: it has no body, but a page must not make a browser send one), and every GET
// route answers HEAD (serve.REST).
func (s *Server) rest() http.Handler {
	e := serve.REST(s.metrics, errs)
	e.GET("/healthz", s.getHealthz)
	e.GET("/v1/regions", func(c echo.Context) error {
		rs, err := s.list(c.Request().Context())
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string][]region.Region{"regions": rs})
	})
	e.GET("/v1/regions/:name", func(c echo.Context) error {
		r, err := s.get(c.Request().Context(), c.Param("name"))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, r)
	})
	e.POST("/v1/regions", func(c echo.Context) error {
		var req struct {
			Name string `json:"name"`
			Peer string `json:"peer"`
		}
		if err := apierr.DecodeBody(c.Request().Body, maxBody, &req); err != nil {
			return err
		}
		r, err := s.add(c.Request().Context(), req.Name, req.Peer)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, r)
	})
	// POST /v1/regions/{name}:retire (echo parameters end at '/', so the verb is split off here).
	e.POST("/v1/regions/:name", func(c echo.Context) error {
		name, ok := strings.CutSuffix(c.Param("name"), ":retire")
		if !ok {
			return echo.NewHTTPError(http.StatusNotFound, "unknown action; POST /v1/regions/{name}:retire retires a region")
		}
		r, err := s.retire(c.Request().Context(), name)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, r)
	})
	e.GET("/v1/layouts", func(c echo.Context) error {
		doc, err := s.layouts(c.Request().Context())
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, doc)
	})
	e.GET("/v1/audit", func(c echo.Context) error {
		if _, err := caller(c.Request().Context(), true); err != nil {
			return err
		}
		log, err := s.st.AuditLog(c.Request().Context())
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]any{"entries": log})
	})
	return e
}

// getHealthz answers 200 when the store answers, else 503; 503 draining from the start of a
// shutdown (while the API still serves), and once the server certificate in use has expired.
func (s *Server) getHealthz(c echo.Context) error {
	if s.health.Draining() {
		return c.JSON(http.StatusServiceUnavailable, healthz.Draining)
	}
	if err := s.gate.CertificateProblem(); err != nil {
		return c.JSON(http.StatusServiceUnavailable, healthz.Unavailable(auth.ReasonCertificate, err.Error()))
	}
	if _, err := s.st.Schedule(c.Request().Context()); err != nil {
		return c.JSON(http.StatusServiceUnavailable, healthz.Unavailable("store_unavailable", err.Error()))
	}
	return c.JSON(http.StatusOK, healthz.OK)
}
