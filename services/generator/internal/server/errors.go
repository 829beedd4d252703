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

// errs maps the generator's errors (refusals and bad IDs; apierr.Map does identities, deadlines
// and the rest) for REST and Connect alike: the one place they are mapped.
var errs apierr.Mapper = func(err error) *apierr.Error {
	switch {
	case idcore.Reason(err) != "":
		// A refusal: this generator cannot issue now; another one (or this one shortly) can.
		return &apierr.Error{Status: http.StatusServiceUnavailable, Code: connect.CodeUnavailable, Reason: idcore.Reason(err), Msg: err.Error()}
	case errors.Is(err, idcore.ErrInvalidID):
		return apierr.BadRequest("%v", err)
	}
	return nil
}
