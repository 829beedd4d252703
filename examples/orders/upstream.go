package orders

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/svc/apierr"
)

// newID takes one ID from the ID client, waiting at most IDTimeout when its buffer is empty.
func (s *Service) newID(ctx context.Context) (idcore.ID, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.IDTimeout)
	defer cancel()
	id, err := s.opts.IDs.Next(ctx)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			// The request's own deadline or the wait for an ID: either way the generators did not
			// answer in time.
			err = fmt.Errorf("%w: no ID within %s: %v", errNoID, s.opts.IDTimeout, err)
		}
		return 0, err
	}
	return id, nil
}

// publish returns the public ID of an internal ID under resource, publishing it when it has none.
func (s *Service) publish(ctx context.Context, id idcore.ID, resource string) (string, error) {
	resp, err := s.opts.PublicIDs.Publish(ctx, connect.NewRequest(&idgenv1.PublishRequest{InternalId: int64(id), Resource: resource}))
	if err != nil {
		return "", &publishError{err: err}
	}
	pub := resp.Msg.GetPublicId()
	if !strings.HasPrefix(pub, resource+"_") {
		return "", &publishError{err: fmt.Errorf("answer without a %s_ public ID (is it running with --resources ord,cus?)", resource)}
	}
	return pub, nil
}

// errNoID: the ID client had no ID for the request in time.
var errNoID = errors.New("generator unavailable")

// publishError is a failed call to the public-ID service.
type publishError struct{ err error }

func (e *publishError) Error() string { return "public-ID service: " + e.err.Error() }
func (e *publishError) Unwrap() error { return e.err }

func notFound(msg string) *apierr.Error {
	return &apierr.Error{Status: http.StatusNotFound, Code: connect.CodeNotFound, Reason: "not_found", Msg: msg}
}

// errs maps the service's errors for its REST API, the one place they are mapped (apierr.Map
// does deadlines and cancellation, a call to the public-ID service that timed out included, and
// the rest): no ID in time is a 503 (retry later), a public-ID service that cannot be reached or
// is unavailable a 503, one that refused the call a 502 (this service asked wrongly or the other
// is misconfigured: retrying will not help). Messages name the upstream and what it said.
var errs apierr.Mapper = func(err error) *apierr.Error {
	var pe *publishError
	var ce *connect.Error
	switch {
	case errors.Is(err, errNoID):
		return &apierr.Error{Status: http.StatusServiceUnavailable, Code: connect.CodeUnavailable, Reason: "generator_unavailable", Msg: err.Error()}
	case errors.As(err, &pe) && errors.As(err, &ce) && ce.Code() == connect.CodeUnavailable:
		return &apierr.Error{Status: http.StatusServiceUnavailable, Code: connect.CodeUnavailable, Reason: "public_ids_unavailable", Msg: pe.Error()}
	case errors.As(err, &pe):
		return &apierr.Error{Status: http.StatusBadGateway, Code: connect.CodeInternal, Reason: "public_ids_refused", Msg: pe.Error()}
	}
	return nil
}
