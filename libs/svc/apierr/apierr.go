// Package apierr is the services' request error: an HTTP status and a Connect code with the
// message, so that one mapping serves REST and Connect alike.
package apierr

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"connectrpc.com/connect"
	"github.com/idgen/idgen/libs/svc/auth"
)

// Error is an error with its HTTP status and Connect code.
type Error struct {
	Status     int
	Code       connect.Code
	Reason     string // a stable name for bodies that carry one: "bad_request", "forbidden", …
	Msg        string
	RetryAfter int // seconds, for 429 (Retry-After)
}

func (e *Error) Error() string { return e.Msg }

// New returns an error with a status, a code and a message.
func New(status int, code connect.Code, msg string) *Error {
	return &Error{Status: status, Code: code, Msg: msg}
}

// BadRequest is a 400 (invalid_argument) whose message says what is wrong.
func BadRequest(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: connect.CodeInvalidArgument, Reason: "bad_request", Msg: fmt.Sprintf(format, args...)}
}

// Map returns err as an *Error: err itself when it is one, 403 (permission_denied) for an
// identity the auth package refused, else what service maps it to, else 500 (internal).
func Map(err error, service func(error) *Error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, auth.ErrUnknown), errors.Is(err, auth.ErrBadIdentity):
		return &Error{Status: http.StatusForbidden, Code: connect.CodePermissionDenied, Reason: "forbidden", Msg: err.Error()}
	}
	if e = service(err); e != nil {
		return e
	}
	return &Error{Status: http.StatusInternalServerError, Code: connect.CodeInternal, Reason: "internal", Msg: "internal error"}
}

// Connect returns the error for a Connect handler, with Retry-After in its metadata when set.
func (e *Error) Connect() *connect.Error {
	ce := connect.NewError(e.Code, errors.New(e.Msg))
	if e.RetryAfter > 0 {
		ce.Meta().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	return ce
}
