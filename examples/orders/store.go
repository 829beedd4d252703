package orders

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

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

const orderColumns = `id, customer_id, status, total_cents, currency, created_at, items`

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
	o.ID, o.CustomerID, o.created = idcore.ID(id), idcore.ID(cid), created
	o.CreatedAt = time.Unix(0, created).UTC().Format(time.RFC3339)
	if err := json.Unmarshal([]byte(items), &o.Items); err != nil {
		return o, fmt.Errorf("order %d: items: %w", id, err)
	}
	return o, nil
}

func (s *Service) order(ctx context.Context, id idcore.ID) (Order, error) {
	o, err := scanOrder(s.db.QueryRowContext(ctx, `SELECT `+orderColumns+` FROM orders WHERE id = ?`, int64(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return o, notFound(fmt.Sprintf("order %d not found", id))
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
		return Order{}, notFound(fmt.Sprintf("order %d not found", id))
	}
	return s.order(ctx, id)
}

// cursor is where a listing goes on: after the order made at CreatedAt (Unix nanoseconds) with
// ID, in the listing's order (newest first). It travels as base64url of its JSON, as upstreams'
// cursors do, internal ID and all: the gateway swaps it for a handle of its own (a token).
type cursor struct {
	CreatedAt int64 `json:"created_at"`
	ID        int64 `json:"id"`
}

func (c cursor) String() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// parseCursor reads a cursor that String wrote.
func parseCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		err = dec.Decode(&c)
	}
	if err != nil || c.ID <= 0 || c.String() != s {
		return cursor{}, errors.New("not a cursor this service gave")
	}
	return c, nil
}

// listOrders returns a customer's orders, newest first, of one status ("" for any), after the
// cursor (nil: from the newest), and the cursor of the page after them ("" when there is none).
func (s *Service) listOrders(ctx context.Context, cid idcore.ID, status string, limit int, after *cursor) ([]Order, string, error) {
	var one int
	if err := s.db.QueryRowContext(ctx, `SELECT 1 FROM customers WHERE id = ?`, int64(cid)).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return nil, "", notFound(fmt.Sprintf("customer %d not found", cid))
	} else if err != nil {
		return nil, "", err
	}
	query := `SELECT ` + orderColumns + ` FROM orders WHERE customer_id = ?`
	args := []any{int64(cid)}
	if status != "" {
		query += ` AND status = ?`
		args = append(args, status)
	}
	if after != nil {
		query += ` AND (created_at < ? OR created_at = ? AND id < ?)`
		args = append(args, after.CreatedAt, after.CreatedAt, after.ID)
	}
	query += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit+1) // one more tells whether a page follows
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	orders := []Order{}
	for rows.Next() {
		o, err := scanOrder(rows)
		if err != nil {
			return nil, "", err
		}
		orders = append(orders, o)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	next := ""
	if len(orders) > limit {
		orders = orders[:limit]
		last := orders[limit-1]
		next = cursor{CreatedAt: last.created, ID: int64(last.ID)}.String()
	}
	return orders, next, nil
}

func (s *Service) insertOrder(ctx context.Context, oid, cid idcore.ID, total int64, items []Item) error {
	b, err := json.Marshal(items)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO orders (`+orderColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		int64(oid), int64(cid), StatusPlaced, total, currency, s.opts.Now().UnixNano(), string(b))
	return err
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
