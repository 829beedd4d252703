package server

import (
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/svc/apierr"
)

func overQuota(caller string, retryAfter int) *apierr.Error {
	return &apierr.Error{Status: http.StatusTooManyRequests, Code: connect.CodeResourceExhausted, Reason: "quota",
		Msg: fmt.Sprintf("caller %s is over its quota; retry after %d s", caller, retryAfter), RetryAfter: retryAfter}
}

// mapErr turns any error of the request path into an apierr.Error: the one place refusals, bad
// input, identity and quota errors are mapped for both protocols.
func mapErr(err error) *apierr.Error {
	return apierr.Map(err, func(err error) *apierr.Error {
		switch {
		case idcore.Reason(err) != "":
			// A refusal: this generator cannot issue now; another one (or this one shortly) can.
			return &apierr.Error{Status: http.StatusServiceUnavailable, Code: connect.CodeUnavailable, Reason: idcore.Reason(err), Msg: err.Error()}
		case errors.Is(err, idcore.ErrInvalidID):
			return apierr.BadRequest("%v", err)
		}
		return nil
	})
}
