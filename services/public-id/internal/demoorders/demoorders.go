// Package demoorders is the orders upstream of the local stack's demo: a small order service that
// keeps customers and orders in SQLite keyed by internal IDs (taken from a generator) and hands a
// customer only public IDs (published through the public-ID service's internal API). Its
// /internal/ endpoints speak internal IDs; the customer gateway fronts the read endpoints and
// rewrites the IDs to public ones (deploy/local/routes.json).
//
// Endpoints (internal IDs as decimal strings):
//
//	GET  /internal/orders/{id}                                       the order
//	GET  /internal/customers/{id}/orders?status=placed|shipped&limit=N  a customer's orders, newest first
//	POST /internal/checkout                                          {"customer","items"} -> {"order","customer"} public IDs
//	POST /internal/orders/{id}:ship                                  marks the order shipped, returns it
//	GET  /healthz
package demoorders

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idgen/idgen/libs/conn/sqlitedsn"
	"github.com/idgen/idgen/libs/idcore"
	_ "modernc.org/sqlite"
)

// Order statuses.
const (
	StatusPlaced  = "placed"
	StatusShipped = "shipped"
)

// Limits of a checkout and of a listing.
const (
	MaxItems        = 100
	MaxSKULen       = 64
	MaxQuantity     = 1000
	MaxUnitCents    = 10_000_000
	MaxCustomerName = 100
	DefaultLimit    = 20
	MaxLimit        = 50
	currency        = "EUR"
	maxBody         = 64 << 10
)

// Item is one line of an order.
type Item struct {
	SKU       string `json:"sku"`
	Quantity  int64  `json:"quantity"`
	UnitCents int64  `json:"unit_cents"`
}

// Order is an order as the internal endpoints return it.
type Order struct {
	ID         idcore.ID `json:"id"`
	CustomerID idcore.ID `json:"customer_id"`
	Status     string    `json:"status"`
	TotalCents int64     `json:"total_cents"`
	Currency   string    `json:"currency"`
	CreatedAt  string    `json:"created_at"`
	Items      []Item    `json:"items"`
}

// Options configures a Service.
type Options struct {
	Generator string           // base URL of a generator's REST API (POST /v1/ids)
	PublicIDs string           // base URL of the public-ID service's internal API (POST /v1/public-ids)
	Client    *http.Client     // for both; nil: a client with a 5 s timeout
	Logger    *slog.Logger     // nil: discard
	Now       func() time.Time // nil: time.Now
}

// Service is the demo orders upstream: an http.Handler over an SQLite file.
type Service struct {
	db   *sql.DB
	opts Options
	mux  *http.ServeMux
}

var schema = []string{
	`CREATE TABLE IF NOT EXISTS customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)`,
	`CREATE TABLE IF NOT EXISTS orders (
		id INTEGER PRIMARY KEY,
		customer_id INTEGER NOT NULL REFERENCES customers (id),
		status TEXT NOT NULL,
		total_cents INTEGER NOT NULL,
		currency TEXT NOT NULL,
		created_at INTEGER NOT NULL, -- Unix nanoseconds
		items TEXT NOT NULL          -- JSON array of Item
	)`,
	`CREATE INDEX IF NOT EXISTS orders_by_customer ON orders (customer_id, created_at DESC, id DESC)`,
}

// New opens (creating when missing) the SQLite file at path and returns the service over it.
func New(ctx context.Context, path string, opts Options) (*Service, error) {
	if opts.Generator == "" || opts.PublicIDs == "" {
		return nil, errors.New("demoorders: the generator and public-ID URLs are required")
	}
	opts.Generator = strings.TrimRight(opts.Generator, "/")
	opts.PublicIDs = strings.TrimRight(opts.PublicIDs, "/")
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 5 * time.Second}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	db, err := sql.Open("sqlite", sqlitedsn.DSN(path, sqlitedsn.Options{ForeignKeys: true}))
	if err != nil {
		return nil, fmt.Errorf("demoorders: open %s: %w", path, err)
	}
	for _, stmt := range schema {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			db.Close()
			return nil, fmt.Errorf("demoorders: %s: %w", path, err)
		}
	}
	s := &Service{db: db, opts: opts, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /internal/orders/{id}", s.getOrder)
	// A wildcard is a whole path segment, so "{id}:ship" is matched as one segment and split.
	s.mux.HandleFunc("POST /internal/orders/{action}", s.orderAction)
	s.mux.HandleFunc("GET /internal/customers/{id}/orders", s.customerOrders)
	s.mux.HandleFunc("POST /internal/checkout", s.checkout)
	return s, nil
}

// Close closes the database.
func (s *Service) Close() error { return s.db.Close() }

// ServeHTTP implements http.Handler.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// apiError is an error with its HTTP status; its message is what the caller reads.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, format string, args ...any) error {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		b.Reset()
		b.WriteString(`{"error":"encoding the response failed"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// fail writes err as {"error": message}: an apiError with its status, anything else as a 500
// (logged, with a generic message).
func (s *Service) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		s.opts.Logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err.Error())
		ae = &apiError{status: http.StatusInternalServerError, msg: "internal error"}
	} else if ae.status >= 500 {
		s.opts.Logger.Warn("request failed", "method", r.Method, "path", r.URL.Path, "status", ae.status, "error", ae.msg)
	}
	writeJSON(w, ae.status, map[string]string{"error": ae.msg})
}

func (s *Service) healthz(w http.ResponseWriter, r *http.Request) {
	if err := s.db.PingContext(r.Context()); err != nil {
		s.fail(w, r, errorf(http.StatusServiceUnavailable, "database: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func parseID(what, s string) (idcore.ID, error) {
	id, err := idcore.ParseID(s)
	if err != nil || id == 0 {
		return 0, errorf(http.StatusBadRequest, "%s ID %q: want a positive decimal internal ID", what, s)
	}
	return id, nil
}

func (s *Service) getOrder(w http.ResponseWriter, r *http.Request) {
	id, err := parseID("order", r.PathValue("id"))
	if err == nil {
		var o Order
		if o, err = s.order(r.Context(), id); err == nil {
			writeJSON(w, http.StatusOK, o)
			return
		}
	}
	s.fail(w, r, err)
}

func (s *Service) orderAction(w http.ResponseWriter, r *http.Request) {
	seg := r.PathValue("action")
	idText, action, ok := strings.Cut(seg, ":")
	if !ok || action != "ship" {
		s.fail(w, r, errorf(http.StatusNotFound, "no such action: POST /internal/orders/{id}:ship is the one order action"))
		return
	}
	id, err := parseID("order", idText)
	if err == nil {
		var o Order
		if o, err = s.ship(r.Context(), id); err == nil {
			writeJSON(w, http.StatusOK, o)
			return
		}
	}
	s.fail(w, r, err)
}

func (s *Service) customerOrders(w http.ResponseWriter, r *http.Request) {
	if err := s.listOrders(w, r); err != nil {
		s.fail(w, r, err)
	}
}

func (s *Service) listOrders(w http.ResponseWriter, r *http.Request) error {
	cid, err := parseID("customer", r.PathValue("id"))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	for k := range q {
		if k != "status" && k != "limit" {
			return errorf(http.StatusBadRequest, "unknown query parameter %q: want status and limit", k)
		}
	}
	status := q.Get("status")
	if status != "" && status != StatusPlaced && status != StatusShipped {
		return errorf(http.StatusBadRequest, "status %q: want %s or %s", status, StatusPlaced, StatusShipped)
	}
	limit := DefaultLimit
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > MaxLimit {
			return errorf(http.StatusBadRequest, "limit %q: want 1 to %d", v, MaxLimit)
		}
	}
	ctx := r.Context()
	var one int
	if err := s.db.QueryRowContext(ctx, `SELECT 1 FROM customers WHERE id = ?`, int64(cid)).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return errorf(http.StatusNotFound, "customer %d not found", cid)
	} else if err != nil {
		return err
	}
	query := `SELECT id, customer_id, status, total_cents, currency, created_at, items FROM orders WHERE customer_id = ?`
	args := []any{int64(cid)}
	if status != "" {
		query += ` AND status = ?`
		args = append(args, status)
	}
	query += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	orders := []Order{}
	for rows.Next() {
		o, err := scanOrder(rows)
		if err != nil {
			return err
		}
		orders = append(orders, o)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		CustomerID idcore.ID `json:"customer_id"`
		Orders     []Order   `json:"orders"`
	}{cid, orders})
	return nil
}

func scanOrder(row interface{ Scan(...any) error }) (Order, error) {
	var (
		o       Order
		id, cid int64
		created int64
		items   string
	)
	if err := row.Scan(&id, &cid, &o.Status, &o.TotalCents, &o.Currency, &created, &items); err != nil {
		return o, err
	}
	o.ID, o.CustomerID = idcore.ID(id), idcore.ID(cid)
	o.CreatedAt = time.Unix(0, created).UTC().Format(time.RFC3339)
	if err := json.Unmarshal([]byte(items), &o.Items); err != nil {
		return o, fmt.Errorf("order %d: items: %w", id, err)
	}
	return o, nil
}

func (s *Service) order(ctx context.Context, id idcore.ID) (Order, error) {
	o, err := scanOrder(s.db.QueryRowContext(ctx,
		`SELECT id, customer_id, status, total_cents, currency, created_at, items FROM orders WHERE id = ?`, int64(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return o, errorf(http.StatusNotFound, "order %d not found", id)
	}
	return o, err
}

func (s *Service) ship(ctx context.Context, id idcore.ID) (Order, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE orders SET status = ? WHERE id = ?`, StatusShipped, int64(id))
	if err != nil {
		return Order{}, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return Order{}, err
	} else if n == 0 {
		return Order{}, errorf(http.StatusNotFound, "order %d not found", id)
	}
	return s.order(ctx, id)
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
		return 0, errorf(http.StatusBadRequest, "customer: want a name; %s", checkoutShape)
	}
	if n := utf8.RuneCountInString(c.Customer); n > MaxCustomerName {
		return 0, errorf(http.StatusBadRequest, "customer: %d characters, want at most %d", n, MaxCustomerName)
	}
	if len(c.Items) == 0 {
		return 0, errorf(http.StatusBadRequest, "items: want at least one item; %s", checkoutShape)
	}
	if len(c.Items) > MaxItems {
		return 0, errorf(http.StatusBadRequest, "items: %d items, want at most %d", len(c.Items), MaxItems)
	}
	var total int64
	for i, it := range c.Items {
		if !validSKU(it.SKU) {
			return 0, errorf(http.StatusBadRequest, "items[%d].sku %q: want 1 to %d of A-Z a-z 0-9 . _ -", i, it.SKU, MaxSKULen)
		}
		if it.Quantity < 1 || it.Quantity > MaxQuantity {
			return 0, errorf(http.StatusBadRequest, "items[%d].quantity %d: want 1 to %d", i, it.Quantity, MaxQuantity)
		}
		if it.UnitCents < 0 || it.UnitCents > MaxUnitCents {
			return 0, errorf(http.StatusBadRequest, "items[%d].unit_cents %d: want 0 to %d", i, it.UnitCents, MaxUnitCents)
		}
		total += it.Quantity * it.UnitCents // at most 100 × 1000 × 10^7 = 10^12: no overflow
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
func (s *Service) checkout(w http.ResponseWriter, r *http.Request) {
	if err := s.doCheckout(w, r); err != nil {
		s.fail(w, r, err)
	}
}

func (s *Service) doCheckout(w http.ResponseWriter, r *http.Request) error {
	var req checkoutRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return errorf(http.StatusBadRequest, "%s: %v", checkoutShape, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(http.StatusBadRequest, "%s: data after the JSON object", checkoutShape)
	}
	total, err := req.validate()
	if err != nil {
		return err
	}
	ctx := r.Context()
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
	items, err := json.Marshal(req.Items)
	if err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx,
		`INSERT INTO orders (id, customer_id, status, total_cents, currency, created_at, items) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		int64(oid), int64(cid), StatusPlaced, total, currency, s.opts.Now().UnixNano(), string(items)); err != nil {
		return err
	}
	s.opts.Logger.Info("checkout", "order", ord, "customer", cus, "items", len(req.Items), "total_cents", total)
	writeJSON(w, http.StatusCreated, map[string]string{"order": ord, "customer": cus})
	return nil
}

// customer returns the ID of the customer called name, creating the customer when missing.
func (s *Service) customer(ctx context.Context, name string) (idcore.ID, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, `SELECT id FROM customers WHERE name = ?`, name).Scan(&id)
	if err == nil {
		return idcore.ID(id), nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	nid, err := s.newID(ctx)
	if err != nil {
		return 0, err
	}
	// A concurrent checkout of the same name may insert first; the one that lost reads the winner.
	if _, err := s.db.ExecContext(ctx, `INSERT INTO customers (id, name) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, int64(nid), name); err != nil {
		return 0, err
	}
	err = s.db.QueryRowContext(ctx, `SELECT id FROM customers WHERE name = ?`, name).Scan(&id)
	return idcore.ID(id), err
}

// post sends body to url and decodes a 200 or 201 answer into out; any other answer is a 502
// carrying the upstream's status and message.
func (s *Service) post(ctx context.Context, upstream, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return errorf(http.StatusBadGateway, "%s unreachable: %v", upstream, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return errorf(http.StatusBadGateway, "%s: reading the answer: %v", upstream, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return errorf(http.StatusBadGateway, "%s answered %s: %s", upstream, resp.Status, msg)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return errorf(http.StatusBadGateway, "%s: unreadable answer: %v", upstream, err)
	}
	return nil
}

// newID takes one ID from the generator.
func (s *Service) newID(ctx context.Context) (idcore.ID, error) {
	var out struct {
		ID *idcore.ID `json:"id"`
	}
	if err := s.post(ctx, "generator", s.opts.Generator+"/v1/ids", []byte(`{}`), &out); err != nil {
		return 0, err
	}
	if out.ID == nil || *out.ID == 0 {
		return 0, errorf(http.StatusBadGateway, "generator: answer without an ID")
	}
	return *out.ID, nil
}

// publish returns the public ID of an internal ID under resource, publishing it when it has none.
func (s *Service) publish(ctx context.Context, id idcore.ID, resource string) (string, error) {
	body, err := json.Marshal(map[string]string{"internal_id": id.String(), "resource": resource})
	if err != nil {
		return "", err
	}
	var out struct {
		PublicID string `json:"public_id"`
	}
	if err := s.post(ctx, "public-ID service", s.opts.PublicIDs+"/v1/public-ids", body, &out); err != nil {
		return "", err
	}
	if !strings.HasPrefix(out.PublicID, resource+"_") {
		return "", errorf(http.StatusBadGateway, "public-ID service: answer without a %s_ public ID (is it running with --resources ord,cus?)", resource)
	}
	return out.PublicID, nil
}
