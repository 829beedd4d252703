package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// outcome is how a request ended: a value of idgen_gateway_requests_total's outcome label.
type outcome int

const (
	outcomeOK outcome = iota
	outcomeNotFound
	outcomeBadRequest
	outcomeMethodNotAllowed
	outcomeRateLimited
	outcomeBusy
	outcomeUpstream4xx
	outcomeUpstreamError
	outcomeUpstreamTimeout
	outcomeUnsafe
	outcomeStoreUnavailable
	outcomeCanceled
)

// outcomes is the table of outcomes: the label, the status the customer gets, the public
// message of the body {"error": …} (the gateway's own words, never an upstream's), and whether
// the log says why (at warn level; without an upstream's bytes). A 429 or 503 carries
// Retry-After. Where the status or the message is 0 or "", the failure carries its own: a bad
// request says what is wrong, an upstream's 4xx keeps its status.
var outcomes = [...]struct {
	label  string
	status int
	msg    string
	logged bool
}{
	outcomeOK:               {"ok", 0, "", false},
	outcomeNotFound:         {"not_found", http.StatusNotFound, "not found", false}, // unknown, malformed, the upstream's 404 and 410 alike
	outcomeBadRequest:       {"bad_request", http.StatusBadRequest, "", false},
	outcomeMethodNotAllowed: {"method_not_allowed", http.StatusMethodNotAllowed, "", false},
	outcomeRateLimited:      {"rate_limited", http.StatusTooManyRequests, "too many requests", false},
	outcomeBusy:             {"busy", http.StatusServiceUnavailable, "service busy, retry later", false}, // a limit reached
	outcomeUpstream4xx:      {"upstream_4xx", 0, "", false},
	outcomeUpstreamError:    {"upstream_error", http.StatusBadGateway, "bad gateway", true},
	outcomeUpstreamTimeout:  {"upstream_timeout", http.StatusGatewayTimeout, "gateway timeout", true},
	outcomeUnsafe:           {"unsafe_response", http.StatusBadGateway, "bad gateway", false}, // logged with its field and reason
	outcomeStoreUnavailable: {"store_unavailable", http.StatusServiceUnavailable, "service unavailable", true},
	outcomeCanceled:         {"canceled", http.StatusServiceUnavailable, "service unavailable", false}, // the customer went away first: logged at debug level
}

func (o outcome) String() string { return outcomes[o].label }

// failure is a step's error: the outcome the request ends with and what its reply and log need.
// Steps return it, never write a reply; ServeHTTP answers it (serve.go).
type failure struct {
	outcome    outcome
	status     int    // the reply's status, where the outcome's table row has none
	msg        string // the public message, where the outcome's row has none
	allow      string // method_not_allowed: the Allow header
	retryAfter int    // seconds, for a 429 or 503; 1 when 0
	err        error  // the cause, for the log only
}

func (f *failure) Error() string {
	if f.err != nil {
		return f.outcome.String() + ": " + f.err.Error()
	}
	return f.outcome.String()
}

func (f *failure) Unwrap() error { return f.err }

// fail is a failure of outcome o, caused by err (nil when there is nothing to say).
func fail(o outcome, err error) *failure { return &failure{outcome: o, err: err} }

// badRequest is a 400 that says what is wrong.
func badRequest(msg string) *failure { return &failure{outcome: outcomeBadRequest, msg: msg} }

// upstream4xx is an upstream's 4xx, passed on with its status and the gateway's own words for
// it: 401 and 407 become 403 (the customer cannot authenticate to an upstream), and a status
// without a name becomes 400.
func upstream4xx(code int) *failure {
	if code == http.StatusUnauthorized || code == http.StatusProxyAuthRequired {
		code = http.StatusForbidden
	}
	msg := http.StatusText(code)
	if msg == "" {
		code, msg = http.StatusBadRequest, "bad request"
	}
	return &failure{outcome: outcomeUpstream4xx, status: code, msg: strings.ToLower(msg)}
}

// upstreamFailure is an exchange with the upstream that broke off: 504 when the route's timeout
// ran out (or the network's), 502 otherwise; a customer who went away (customer is the
// request's context) is no upstream's fault.
func upstreamFailure(customer context.Context, err error) *failure {
	var ne net.Error
	switch {
	case customer.Err() != nil:
		return fail(outcomeCanceled, err)
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return fail(outcomeUpstreamTimeout, err)
	}
	return fail(outcomeUpstreamError, err)
}

// upstreamStatus is an upstream answer of a status the gateway does not pass; only the status
// code goes to the log (the reason phrase is the upstream's text).
func upstreamStatus(code int) *failure {
	return fail(outcomeUpstreamError, fmt.Errorf("upstream answered %d", code))
}

// refusal is the failure of rebuilding a response (its body, IDs and headers): 502 for an unsafe
// response, 503 when a limit was reached or the store failed on the way, 502 or 504 when the
// upstream's body broke off.
func refusal(customer context.Context, err error) *failure {
	var ue *UnsafeError
	switch {
	case errors.As(err, &ue):
		return fail(outcomeUnsafe, err)
	case customer.Err() != nil:
		return fail(outcomeCanceled, err)
	case errors.Is(err, errBusy):
		return fail(outcomeBusy, err)
	case errors.Is(err, errUpstream):
		return upstreamFailure(customer, err)
	}
	return fail(outcomeStoreUnavailable, err)
}

// errBusy: a rewrite slot stayed taken for RewriteWait, or a body found no room in the budget.
var errBusy = errors.New("gateway: busy")

// errUpstream: the upstream's body could not be read whole.
var errUpstream = errors.New("gateway: upstream body")
