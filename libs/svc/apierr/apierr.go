// Package apierr is the services' request error: an HTTP status and a Connect code with the
// message, so that one mapping serves REST and Connect alike.
package apierr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

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

// BadRequest is a 400 (invalid_argument) whose message says what is wrong. The format is the
// message as the caller reads it; an error among args is written as Clean gives its text.
func BadRequest(format string, args ...any) *Error {
	clean := make([]any, len(args))
	for i, a := range args {
		if err, ok := a.(error); ok && err != nil {
			a = Clean(err.Error())
		}
		clean[i] = a
	}
	return &Error{Status: http.StatusBadRequest, Code: connect.CodeInvalidArgument, Reason: "bad_request", Msg: fmt.Sprintf(format, clean...)}
}

// Clean returns an error's text as a caller reads it, without the package names the texts of
// error values begin with ("idcore: clock moved backwards: 12 ms" reads "clock moved backwards:
// 12 ms"): useful in logs, noise to a caller. A package name is a leading word of lower-case
// letters and digits followed by ": "; Clean drops every one in a row, whichever package wrote
// it. It is for the text of error values only: a message written for the caller, such as
// "count: 3 is too many", is never passed through it.
func Clean(text string) string {
	for {
		word, rest, ok := strings.Cut(text, ": ")
		if !ok || !packageName(word) {
			return text
		}
		text = rest
	}
}

// packageName tells whether word has the form of a Go package name as errors spell it.
func packageName(word string) bool {
	if word == "" || word[0] < 'a' || word[0] > 'z' {
		return false
	}
	for _, c := range []byte(word) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// StatusClientClosed is the status logged and counted for a request its caller canceled (the
// caller is gone, so nobody reads it): nginx's 499.
const StatusClientClosed = 499

// Deadline and cancellation: the caller's own limits, never server faults.
var (
	deadlineExceeded = &Error{Status: http.StatusGatewayTimeout, Code: connect.CodeDeadlineExceeded, Reason: "deadline_exceeded",
		Msg: "the request's deadline passed before it could be served"}
	canceled = &Error{Status: StatusClientClosed, Code: connect.CodeCanceled, Reason: "canceled",
		Msg: "the caller canceled the request"}
)

// Map returns err as an *Error: err itself when it is one, 504 (deadline_exceeded) and 499
// (canceled) for the request context's end, 403 (permission_denied) for an identity the auth
// package refused, else what service maps it to (err's text in its message cleaned, as Clean
// does), else 500 (internal).
func Map(err error, service func(error) *Error) *Error {
	var e *Error
	var ce *connect.Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &ce) && ce.Code() == connect.CodeDeadlineExceeded:
		return deadlineExceeded
	case errors.Is(err, context.Canceled),
		errors.As(err, &ce) && ce.Code() == connect.CodeCanceled:
		return canceled
	case errors.Is(err, auth.ErrUnknown), errors.Is(err, auth.ErrBadIdentity):
		return &Error{Status: http.StatusForbidden, Code: connect.CodePermissionDenied, Reason: "forbidden", Msg: Clean(err.Error())}
	}
	if e = service(err); e != nil {
		// Where the service's message repeats err's text, the caller reads it cleaned.
		c := *e
		if text := err.Error(); text != "" {
			c.Msg = strings.Replace(c.Msg, text, Clean(text), 1)
		}
		return &c
	}
	return &Error{Status: http.StatusInternalServerError, Code: connect.CodeInternal, Reason: "internal", Msg: "internal error"}
}

// Code is the Connect code to count a finished request under: err's own code, or the context's
// end when the request's deadline passed or its caller left (connect-go reports those as
// unknown when the handler never saw them).
func Code(ctx context.Context, err error) connect.Code {
	if err == nil {
		return 0
	}
	code := connect.CodeOf(err)
	if code == connect.CodeUnknown || code == connect.CodeInternal {
		switch {
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
			return connect.CodeDeadlineExceeded
		case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
			return connect.CodeCanceled
		}
	}
	return code
}

// Connect returns the error for a Connect handler, with Retry-After in its metadata when set.
func (e *Error) Connect() *connect.Error {
	ce := connect.NewError(e.Code, errors.New(e.Msg))
	if e.RetryAfter > 0 {
		ce.Meta().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	return ce
}

// CodeOfStatus names a REST answer's status with the Connect code of the same meaning, so the
// code label has one vocabulary across REST, Connect, gRPC and gRPC-Web.
func CodeOfStatus(status int) string {
	switch {
	case status >= 200 && status < 300:
		return "ok"
	case status == http.StatusBadRequest, status == http.StatusUnsupportedMediaType:
		return connect.CodeInvalidArgument.String()
	case status == http.StatusUnauthorized:
		return connect.CodeUnauthenticated.String()
	case status == http.StatusForbidden:
		return connect.CodePermissionDenied.String()
	case status == http.StatusNotFound:
		return connect.CodeNotFound.String()
	case status == http.StatusMethodNotAllowed, status == http.StatusNotImplemented:
		return connect.CodeUnimplemented.String()
	case status == http.StatusConflict:
		return connect.CodeAlreadyExists.String()
	case status == http.StatusRequestEntityTooLarge, status == http.StatusTooManyRequests:
		return connect.CodeResourceExhausted.String()
	case status == StatusClientClosed:
		return connect.CodeCanceled.String()
	case status == http.StatusServiceUnavailable:
		return connect.CodeUnavailable.String()
	case status == http.StatusGatewayTimeout:
		return connect.CodeDeadlineExceeded.String()
	case status >= 400 && status < 500:
		return connect.CodeFailedPrecondition.String()
	}
	return connect.CodeInternal.String()
}

// Body is the JSON body of every REST error of every service: what is wrong, in words a caller
// can act on, and a stable name for it (a metric label, a branch in a caller's code).
type Body struct {
	Error  string `json:"error"`
	Reason string `json:"reason"`
}

// Body returns e's REST body; an error without a reason of its own is named by its Connect
// code ("not_found", "already_exists", …).
func (e *Error) Body() Body {
	b := Body{Error: e.Msg, Reason: e.Reason}
	if b.Reason == "" {
		b.Reason = e.Code.String()
	}
	return b
}

// Mapper is a service's own error mapping for Map: the *Error for an error of its domain, nil
// for one it does not know. It is the one place a service maps its errors for REST and Connect.
type Mapper func(error) *Error

// Map returns err as an *Error (Map with m).
func (m Mapper) Map(err error) *Error { return Map(err, m) }

// Connect returns err for a Connect handler (Map with m, then Connect).
func (m Mapper) Connect(err error) error { return Map(err, m).Connect() }
