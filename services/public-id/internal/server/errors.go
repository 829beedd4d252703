package server

import (
	"errors"
	"net/http"

	"connectrpc.com/connect"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/services/public-id/internal/mapstore"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/publicid"
)

// errs maps the service's errors (apierr.Map does identities, deadlines and the rest) for REST
// and Connect alike: the one place they are mapped. Unknown and malformed public IDs get the
// same answer, so a caller learns nothing from the difference.
var errs apierr.Mapper = func(err error) *apierr.Error {
	switch {
	case errors.Is(err, mapping.ErrNotFound), errors.Is(err, publicid.ErrMalformed):
		return &apierr.Error{Status: http.StatusNotFound, Code: connect.CodeNotFound, Reason: "not_found", Msg: "public id not found"}
	case errors.Is(err, mapping.ErrFilling):
		return &apierr.Error{Status: http.StatusServiceUnavailable, Code: connect.CodeUnavailable, Reason: mapstore.ReasonFilling,
			Msg: "this region's mapping store is being filled from the other regions: nothing was published; another region's endpoint can publish"}
	case errors.Is(err, mapping.ErrUnavailable):
		return &apierr.Error{Status: http.StatusServiceUnavailable, Code: connect.CodeUnavailable, Reason: "store_unavailable", Msg: "mapping store unavailable"}
	case errors.Is(err, mapping.ErrVolatile):
		return &apierr.Error{Status: http.StatusServiceUnavailable, Code: connect.CodeUnavailable, Reason: mapstore.ReasonVolatile,
			Msg: "the mapping store cannot keep new mappings durably now: publishes are refused until it can (nothing was published; resolves work)"}
	}
	return nil
}

// outcomes are the outcome labels of idgen_publicid_store_calls_total, which outcome indexes.
var outcomes = [...]string{"ok", "not_found", mapstore.ReasonFilling, "store_unavailable", mapstore.ReasonVolatile, "error"}

// outcome names a store call's result for idgen_publicid_store_calls_total: its index in outcomes.
func outcome(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, mapping.ErrNotFound):
		return 1
	case errors.Is(err, mapping.ErrFilling):
		return 2
	case errors.Is(err, mapping.ErrUnavailable):
		return 3
	case errors.Is(err, mapping.ErrVolatile):
		return 4
	}
	return 5
}
