package serve

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/labstack/echo/v4"
)

// REST returns the echo instance of a service's REST API: no banner, the request metrics (m),
// and the one error handler of every service. Every error is answered as JSON apierr.Body
// ({"error": message, "reason": name}) with the status errs maps it to, and Retry-After when
// the error carries one; echo's own 404 and 405 are named not_found and method_not_allowed.
func REST(m *RequestMetrics, errs apierr.Mapper) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		ae := restError(err, errs)
		if ae.RetryAfter > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
		}
		_ = c.JSON(ae.Status, ae.Body())
	}
	e.Use(m.Echo(func(err error) int { return restError(err, errs).Status }))
	return e
}

// restError maps a REST handler's error: echo's own (no route, wrong method, or one a handler
// made with echo.NewHTTPError) by its status, the rest by errs.
func restError(err error, errs apierr.Mapper) *apierr.Error {
	var he *echo.HTTPError
	if !errors.As(err, &he) {
		return errs.Map(err)
	}
	msg := http.StatusText(he.Code)
	if m, ok := he.Message.(string); ok {
		msg = apierr.Clean(m)
	}
	reason := apierr.CodeOfStatus(he.Code)
	switch he.Code {
	case http.StatusNotFound:
		reason = "not_found"
	case http.StatusMethodNotAllowed:
		reason = "method_not_allowed"
	}
	return &apierr.Error{Status: he.Code, Reason: reason, Msg: msg}
}
