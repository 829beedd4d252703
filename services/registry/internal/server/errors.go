package server

import (
	"errors"
	"net/http"

	"connectrpc.com/connect"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/services/registry/store"
)

// ninthRegion is the refusal once all eight numbers have been given.
const ninthRegion = "all 8 region numbers (0-7) have been given and numbers are never reused: 0 left. " +
	"For a ninth region, make its IDs UUIDv7 (libs/uuidv7), or add a layout with more region bits " +
	"from a timestamp cutover (a new period of the layout schedule)"

// errs maps the registry's errors (apierr.Map does identities, deadlines and the rest) for REST
// and Connect alike: the one place they are mapped.
var errs apierr.Mapper = func(err error) *apierr.Error {
	switch {
	case errors.Is(err, store.ErrFull):
		return &apierr.Error{Status: http.StatusConflict, Code: connect.CodeResourceExhausted, Reason: "no_number_left", Msg: ninthRegion}
	case errors.Is(err, store.ErrNotFound):
		return &apierr.Error{Status: http.StatusNotFound, Code: connect.CodeNotFound, Reason: "not_found", Msg: err.Error()}
	case errors.Is(err, store.ErrExists):
		return &apierr.Error{Status: http.StatusConflict, Code: connect.CodeAlreadyExists, Reason: "exists", Msg: err.Error()}
	case errors.Is(err, store.ErrRetired):
		return &apierr.Error{Status: http.StatusConflict, Code: connect.CodeAlreadyExists, Reason: "retired", Msg: err.Error()}
	case errors.Is(err, store.ErrUnavailable):
		return &apierr.Error{Status: http.StatusServiceUnavailable, Code: connect.CodeUnavailable, Reason: "store_unavailable", Msg: "the registry's store is unavailable; retry"}
	}
	return nil
}

// notAdmin refuses a change by a caller that is not an admin.
func notAdmin(who string) *apierr.Error {
	return &apierr.Error{Status: http.StatusForbidden, Code: connect.CodePermissionDenied, Reason: "forbidden",
		Msg: who + " is not an admin; changes need an admin identity"}
}
