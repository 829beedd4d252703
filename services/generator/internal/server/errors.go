package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"connectrpc.com/connect"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/svc/auth"
)

// apiError is an error with its HTTP status and Connect code: the one place refusals, bad input,
// identity and quota errors are mapped for both protocols.
type apiError struct {
	status     int
	code       connect.Code
	reason     string // stable name: a refusal reason, "bad_request", "forbidden", "quota"
	msg        string
	retryAfter int // seconds, for 429
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: connect.CodeInvalidArgument, reason: "bad_request", msg: fmt.Sprintf(format, args...)}
}

func overQuota(caller string, retryAfter int) *apiError {
	return &apiError{status: http.StatusTooManyRequests, code: connect.CodeResourceExhausted, reason: "quota",
		msg: fmt.Sprintf("caller %s is over its quota; retry after %d s", caller, retryAfter), retryAfter: retryAfter}
}

// mapErr turns any error of the request path into an apiError.
func mapErr(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, auth.ErrUnknown), errors.Is(err, auth.ErrBadIdentity):
		return &apiError{status: http.StatusForbidden, code: connect.CodePermissionDenied, reason: "forbidden", msg: err.Error()}
	case idcore.Reason(err) != "":
		// A refusal: this generator cannot issue now; another one (or this one shortly) can.
		return &apiError{status: http.StatusServiceUnavailable, code: connect.CodeUnavailable, reason: idcore.Reason(err), msg: err.Error()}
	case errors.Is(err, idcore.ErrInvalidID):
		return badRequest("%v", err)
	}
	return &apiError{status: http.StatusInternalServerError, code: connect.CodeInternal, reason: "internal", msg: "internal error"}
}

func (e *apiError) connect() *connect.Error {
	ce := connect.NewError(e.code, errors.New(e.msg))
	if e.retryAfter > 0 {
		ce.Meta().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	return ce
}
