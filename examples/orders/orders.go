// Package orders is the example a calling team copies: a small order service that keeps customers
// and orders in SQLite keyed by internal IDs and hands a customer only public IDs. It takes its
// IDs through libs/idclient (a buffer of prefetched IDs, refilled in the background, failing over
// to the peer region) and publishes public IDs through the public-ID service's generated Connect
// client (idgenv1connect.PublicIdServiceClient); its REST API is served the way the idgen
// services serve theirs (libs/svc/serve.REST), so its errors are their JSON bodies,
// {"error": message, "reason": name}, and its metrics their idgen_server_* series.
//
// In the local stack it is the orders upstream of the demo (make run, port 7005): its /internal/
// endpoints speak internal IDs; the customer gateway fronts the read endpoints and rewrites the
// IDs to public ones (deploy/local/routes.json).
//
// Endpoints (internal IDs as decimal strings):
//
//	GET  /internal/orders/{id}                                          the order
//	GET  /internal/customers/{id}/orders?status=placed|shipped&limit=N&cursor=C  a customer's orders, newest first; next_cursor continues
//	POST /internal/checkout                                             {"customer","items"} -> {"order","customer"} public IDs
//	POST /internal/orders/{id}:ship                                     marks the order shipped, returns it
//	GET  /healthz                                                       the database answers
//	GET  /metrics                                                       Prometheus
package orders

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/conn/sqlitedsn"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/prometheus/client_golang/prometheus"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver
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
	MaxTotalCents   = 100_000_000 // 1,000,000.00 EUR: the customer gateway's bound of total_cents
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

	created int64 // Unix nanoseconds: a listing's cursor continues after it
}

// IDSource hands out internal IDs: an *idclient.Client.
type IDSource interface {
	Next(ctx context.Context) (idcore.ID, error)
}

// Options configures a Service. IDs and PublicIDs are required.
type Options struct {
	// IDs is where new customers' and orders' IDs come from: an *idclient.Client.
	IDs IDSource
	// PublicIDs publishes them: idgenv1connect.NewPublicIdServiceClient on the public-ID
	// service's internal URL.
	PublicIDs idgenv1connect.PublicIdServiceClient
	// IDTimeout bounds the wait for an ID when the client's buffer is empty. Default: 2 s.
	IDTimeout time.Duration
	// Metrics is where the request metrics are registered, and what /metrics serves. Default: a
	// registry of its own.
	Metrics *prometheus.Registry
	// Logger: default discard.
	Logger *slog.Logger
	// Now is the clock of the orders' creation times. Default: time.Now.
	Now func() time.Time
}

// Service is the order service: an http.Handler over an SQLite file.
type Service struct {
	db   *sql.DB
	opts Options
	h    http.Handler
}

// New opens (creating when missing) the SQLite file at path and returns the service over it.
func New(ctx context.Context, path string, opts Options) (*Service, error) {
	if opts.IDs == nil || opts.PublicIDs == nil {
		return nil, errors.New("orders: an ID source and a public-ID client are required")
	}
	if opts.IDTimeout == 0 {
		opts.IDTimeout = 2 * time.Second
	}
	if opts.Metrics == nil {
		opts.Metrics = prometheus.NewRegistry()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	db, err := sql.Open("sqlite", sqlitedsn.DSN(path, sqlitedsn.Options{ForeignKeys: true}))
	if err != nil {
		return nil, fmt.Errorf("orders: open %s: %w", path, err)
	}
	for _, stmt := range schema {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			db.Close()
			return nil, fmt.Errorf("orders: %s: %w", path, err)
		}
	}
	s := &Service{db: db, opts: opts}
	mux := http.NewServeMux()
	mux.Handle("/metrics", serve.MetricsHandler(opts.Metrics))
	mux.Handle("/", s.rest(serve.NewRequestMetrics(opts.Metrics)))
	s.h = mux
	return s, nil
}

// Close closes the database.
func (s *Service) Close() error { return s.db.Close() }

// ServeHTTP implements http.Handler.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.h.ServeHTTP(w, r) }
