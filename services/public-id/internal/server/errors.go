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

// The outcomes of idgen_publicid_store_calls_total: outcome's answers, which index outcomes.
const (
	outOK = iota
	outNotFound
	outFilling
	outUnavailable
	outVolatile
	outError
)

// outcomes are the outcome labels of idgen_publicid_store_calls_total, by outcome.
var outcomes = [...]string{outOK: "ok", outNotFound: "not_found", outFilling: mapstore.ReasonFilling,
	outUnavailable: "store_unavailable", outVolatile: mapstore.ReasonVolatile, outError: "error"}

// outcome names a store call's result for idgen_publicid_store_calls_total.
func outcome(err error) int {
	switch {
	case err == nil:
		return outOK
	case errors.Is(err, mapping.ErrNotFound):
		return outNotFound
	case errors.Is(err, mapping.ErrFilling):
		return outFilling
	case errors.Is(err, mapping.ErrUnavailable):
		return outUnavailable
	case errors.Is(err, mapping.ErrVolatile):
		return outVolatile
	}
	return outError
}
