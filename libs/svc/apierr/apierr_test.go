package apierr_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"github.com/idgen/idgen/libs/svc/apierr"
)

func TestContextEnds(t *testing.T) {
	none := func(error) *apierr.Error { return nil }
	for _, tt := range []struct {
		err    error
		status int
		code   connect.Code
	}{
		{fmt.Errorf("waiting for the clock: %w", context.DeadlineExceeded), http.StatusGatewayTimeout, connect.CodeDeadlineExceeded},
		{fmt.Errorf("batch: %w", context.Canceled), apierr.StatusClientClosed, connect.CodeCanceled},
		{connect.NewError(connect.CodeDeadlineExceeded, errors.New("late")), http.StatusGatewayTimeout, connect.CodeDeadlineExceeded},
		{errors.New("something broke"), http.StatusInternalServerError, connect.CodeInternal},
	} {
		e := apierr.Map(tt.err, none)
		if e.Status != tt.status || e.Code != tt.code {
			t.Errorf("%v: %d %v, want %d %v", tt.err, e.Status, e.Code, tt.status, tt.code)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	<-ctx.Done()
	if c := apierr.Code(ctx, connect.NewError(connect.CodeUnknown, errors.New("x"))); c != connect.CodeDeadlineExceeded {
		t.Errorf("an unknown error after the deadline counts as %v", c)
	}
	if c := apierr.Code(context.Background(), nil); c != 0 {
		t.Errorf("success counts as %v", c)
	}
}

func TestMessagesWithoutPackageNames(t *testing.T) {
	e := apierr.Map(fmt.Errorf("idcore: clock moved backwards: 12 ms"), func(err error) *apierr.Error {
		return apierr.New(http.StatusServiceUnavailable, connect.CodeUnavailable, err.Error())
	})
	if e.Msg != "clock moved backwards: 12 ms" {
		t.Errorf("message %q", e.Msg)
	}
	if m := apierr.BadRequest("%v", errors.New("idcore: invalid id: \"x\"")).Msg; m != `invalid id: "x"` {
		t.Errorf("bad request %q", m)
	}
	if m := apierr.BadRequest("count: %d is too many", 3).Msg; m != "count: 3 is too many" {
		t.Errorf("the caller's own message was cleaned: %q", m)
	}
	// Any package's name goes, as many in a row as there are; apierr knows none of them.
	wrapped := fmt.Errorf("ordersvc: %w", fmt.Errorf("store2: timeout after 3 s: %w", errors.New("Dial: refused")))
	if m := apierr.BadRequest("placing the order: %v", wrapped).Msg; m != "placing the order: timeout after 3 s: Dial: refused" {
		t.Errorf("bad request with an error %q", m)
	}
	// A service's message keeps its own words around err's text.
	e = apierr.Map(errors.New("billing: card declined"), func(err error) *apierr.Error {
		return apierr.New(http.StatusPaymentRequired, connect.CodeFailedPrecondition, "charge: "+err.Error())
	})
	if e.Msg != "charge: card declined" {
		t.Errorf("mapped message %q", e.Msg)
	}
}

func TestBodyNamesEveryError(t *testing.T) {
	m := apierr.Mapper(func(err error) *apierr.Error {
		return apierr.New(http.StatusNotFound, connect.CodeNotFound, err.Error())
	})
	for _, tt := range []struct {
		err  error
		want apierr.Body
	}{
		{errors.New("registry: no region mars-1"), apierr.Body{Error: "no region mars-1", Reason: "not_found"}},
		{apierr.BadRequest("count is 0"), apierr.Body{Error: "count is 0", Reason: "bad_request"}},
		{apierr.TooLarge(4096), apierr.Body{Error: "the body is larger than the limit of 4096 bytes", Reason: "too_large"}},
		{context.Canceled, apierr.Body{Error: "the caller canceled the request", Reason: "canceled"}},
	} {
		if got := m.Map(tt.err).Body(); got != tt.want {
			t.Errorf("%v: body %+v, want %+v", tt.err, got, tt.want)
		}
	}
	if c := connect.CodeOf(m.Connect(errors.New("x"))); c != connect.CodeNotFound {
		t.Errorf("Connect code %v", c)
	}
}
