package orders

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/healthz"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/labstack/echo/v4"
)

// rest is the REST API on echo, with the idgen services' error handler (serve.REST): a handler
// returns an error and errs turns it into its status and body once.
func (s *Service) rest(m *serve.RequestMetrics) http.Handler {
	e := serve.REST(m, errs)
	e.GET("/healthz", s.getHealthz)
	e.GET("/internal/orders/:id", s.getOrder)
	// A path parameter is a whole segment, so "{id}:ship" is matched as one and split.
	e.POST("/internal/orders/:action", s.orderAction)
	e.GET("/internal/customers/:id/orders", s.customerOrders)
	e.POST("/internal/checkout", s.checkout)
	return e
}

func (s *Service) getHealthz(c echo.Context) error {
	if err := s.db.PingContext(c.Request().Context()); err != nil {
		return c.JSON(http.StatusServiceUnavailable, healthz.Unavailable("database", "database: "+err.Error()))
	}
	return c.JSON(http.StatusOK, healthz.OK)
}

func parseID(what, s string) (idcore.ID, error) {
	id, err := idcore.ParseID(s)
	if err != nil || id == 0 {
		return 0, apierr.BadRequest("%s ID %q: want a positive decimal internal ID", what, s)
	}
	return id, nil
}

func (s *Service) getOrder(c echo.Context) error {
	id, err := parseID("order", c.Param("id"))
	if err != nil {
		return err
	}
	o, err := s.order(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, o)
}

func (s *Service) orderAction(c echo.Context) error {
	idText, action, ok := strings.Cut(c.Param("action"), ":")
	if !ok || action != "ship" {
		return notFound("no such action: POST /internal/orders/{id}:ship is the one order action")
	}
	id, err := parseID("order", idText)
	if err != nil {
		return err
	}
	o, err := s.ship(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, o)
}

func (s *Service) customerOrders(c echo.Context) error {
	cid, err := parseID("customer", c.Param("id"))
	if err != nil {
		return err
	}
	q := c.QueryParams()
	for k := range q {
		if k != "status" && k != "limit" && k != "cursor" {
			return apierr.BadRequest("unknown query parameter %q: want status, limit and cursor", k)
		}
	}
	status := q.Get("status")
	if status != "" && status != StatusPlaced && status != StatusShipped {
		return apierr.BadRequest("status %q: want %s or %s", status, StatusPlaced, StatusShipped)
	}
	limit := DefaultLimit
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > MaxLimit {
			return apierr.BadRequest("limit %q: want 1 to %d", v, MaxLimit)
		}
	}
	var after *cursor
	if v := q.Get("cursor"); v != "" {
		cur, err := parseCursor(v)
		if err != nil {
			return apierr.BadRequest("cursor: %v; want the next_cursor of a page", err)
		}
		after = &cur
	}
	orders, next, err := s.listOrders(c.Request().Context(), cid, status, limit, after)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, struct {
		CustomerID idcore.ID `json:"customer_id"`
		Orders     []Order   `json:"orders"`
		NextCursor string    `json:"next_cursor"` // "" on the last page
	}{cid, orders, next})
}

type checkoutRequest struct {
	Customer string `json:"customer"`
	Items    []Item `json:"items"`
}

const checkoutShape = `want {"customer": "<name>", "items": [{"sku": "<sku>", "quantity": <n>, "unit_cents": <n>}, …]}`

// validate checks a checkout and returns the order's total.
func (c *checkoutRequest) validate() (int64, error) {
	c.Customer = strings.TrimSpace(c.Customer)
	if c.Customer == "" {
		return 0, apierr.BadRequest("customer: want a name; %s", checkoutShape)
	}
	if n := utf8.RuneCountInString(c.Customer); n > MaxCustomerName {
		return 0, apierr.BadRequest("customer: %d characters, want at most %d", n, MaxCustomerName)
	}
	if len(c.Items) == 0 {
		return 0, apierr.BadRequest("items: want at least one item; %s", checkoutShape)
	}
	if len(c.Items) > MaxItems {
		return 0, apierr.BadRequest("items: %d items, want at most %d", len(c.Items), MaxItems)
	}
	var total int64
	for i, it := range c.Items {
		if !validSKU(it.SKU) {
			return 0, apierr.BadRequest("items[%d].sku %q: want 1 to %d of A-Z a-z 0-9 . _ -", i, it.SKU, MaxSKULen)
		}
		if it.Quantity < 1 || it.Quantity > MaxQuantity {
			return 0, apierr.BadRequest("items[%d].quantity %d: want 1 to %d", i, it.Quantity, MaxQuantity)
		}
		if it.UnitCents < 0 || it.UnitCents > MaxUnitCents {
			return 0, apierr.BadRequest("items[%d].unit_cents %d: want 0 to %d", i, it.UnitCents, MaxUnitCents)
		}
		total += it.Quantity * it.UnitCents // at most 100 × 1000 × 10^7 = 10^12: no overflow
	}
	if total > MaxTotalCents {
		return 0, apierr.BadRequest("total_cents %d: want at most %d", total, MaxTotalCents)
	}
	return total, nil
}

func validSKU(s string) bool {
	if s == "" || len(s) > MaxSKULen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkout creates (or reuses, by name) the customer and creates the order, both with IDs from
// the generator, publishes both, and answers with the public IDs only: what a shop hands the
// customer as links.
func (s *Service) checkout(c echo.Context) error {
	var req checkoutRequest
	if err := apierr.DecodeBody(c.Request().Body, maxBody, &req); err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
			return apierr.BadRequest("%s; %s", ae.Msg, checkoutShape)
		}
		return err
	}
	total, err := req.validate()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	cid, err := s.customer(ctx, req.Customer)
	if err != nil {
		return err
	}
	cus, err := s.publish(ctx, cid, "cus")
	if err != nil {
		return err
	}
	// The order's public ID is published before the order is stored: a failed publish leaves no
	// order that no customer can reach; a failed insert leaves a public ID that resolves to a 404.
	oid, err := s.newID(ctx)
	if err != nil {
		return err
	}
	ord, err := s.publish(ctx, oid, "ord")
	if err != nil {
		return err
	}
	if err := s.insertOrder(ctx, oid, cid, total, req.Items); err != nil {
		return err
	}
	s.opts.Logger.Info("checkout", "order", ord, "customer", cus, "items", len(req.Items), "total_cents", total)
	return c.JSON(http.StatusCreated, map[string]string{"order": ord, "customer": cus})
}
