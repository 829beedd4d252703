// Package sqlitestore is the registry's embedded store: an SQLite file. Add runs in one
// IMMEDIATE transaction, so concurrent adds from several processes never share a number.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/idgen/idgen/libs/conn/sqlitedsn"
	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/services/registry/store"
	_ "modernc.org/sqlite"
)

// Store is a registry in an SQLite file.
type Store struct {
	db     *sql.DB
	closed atomic.Bool // after Close, every call fails with store.ErrUnavailable
}

var _ store.Store = (*Store)(nil)

// Open opens (creating when missing) the registry file at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sql.Open("sqlite", sqlitedsn.DSN(path, sqlitedsn.Options{}))
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	s := &Store{db: db}
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS regions (number INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, peer TEXT NOT NULL,
			status TEXT NOT NULL, added_at INTEGER NOT NULL, retired_at INTEGER)`,
		`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, actor TEXT NOT NULL,
			action TEXT NOT NULL, detail TEXT NOT NULL)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			return nil, s.mapErr("create tables", err)
		}
	}
	return s, nil
}

// mapErr is the driver's one error mapping: what sqlitedsn.Unavailable reports (busy, locked,
// I/O, can't open, a deadline), and any error of a closed store, becomes store.ErrUnavailable;
// the native error stays wrapped, so errors.As still reaches it.
func (s *Store) mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if sqlitedsn.Unavailable(err) || s.closed.Load() {
		return fmt.Errorf("sqlitestore: %s: %w: %w", op, store.ErrUnavailable, err)
	}
	return fmt.Errorf("sqlitestore: %s: %w", op, err)
}

// Seed implements store.Store.
func (s *Store) Seed(ctx context.Context, regions []region.Region, schedule string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.mapErr("seed", err)
	}
	defer tx.Rollback()
	next := 0
	for _, r := range regions {
		next = max(next, r.Number+1)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('next_number', ?) ON CONFLICT DO NOTHING`, strconv.Itoa(next))
	if err != nil {
		return s.mapErr("seed", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.mapErr("seed", err)
	} else if n == 0 {
		return nil // seeded before
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('schedule', ?)`, schedule); err != nil {
		return s.mapErr("seed", err)
	}
	for _, r := range regions {
		if _, err := tx.ExecContext(ctx, `INSERT INTO regions (number, name, peer, status, added_at) VALUES (?, ?, ?, ?, ?)`,
			r.Number, r.Name, r.Peer, r.Status, r.AddedAt.UnixMilli()); err != nil {
			return s.mapErr("seed", err)
		}
	}
	return s.mapErr("seed", tx.Commit())
}

const cols = `number, name, peer, status, added_at, retired_at`

func scan(row interface{ Scan(...any) error }) (region.Region, error) {
	var r region.Region
	var added int64
	var retired sql.NullInt64
	if err := row.Scan(&r.Number, &r.Name, &r.Peer, &r.Status, &added, &retired); err != nil {
		return r, err
	}
	r.AddedAt = time.UnixMilli(added).UTC()
	if retired.Valid {
		t := time.UnixMilli(retired.Int64).UTC()
		r.RetiredAt = &t
	}
	return r, nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context) ([]region.Region, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+cols+` FROM regions ORDER BY number`)
	if err != nil {
		return nil, s.mapErr("list", err)
	}
	defer rows.Close()
	var out []region.Region
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return nil, s.mapErr("list", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.mapErr("list", err)
	}
	return out, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, name string) (region.Region, error) {
	r, err := scan(s.db.QueryRowContext(ctx, `SELECT `+cols+` FROM regions WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("%w: %q", store.ErrNotFound, name)
	}
	return r, s.mapErr("get", err)
}

// Add implements store.Store.
func (s *Store) Add(ctx context.Context, name, peer string, at time.Time) (region.Region, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return region.Region{}, s.mapErr("add", err)
	}
	defer tx.Rollback()
	next, err := nextNumber(ctx, tx)
	if err != nil {
		return region.Region{}, s.mapErr("add", err)
	}
	var exists int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM regions WHERE name = ?`, name).Scan(&exists); err != nil {
		return region.Region{}, s.mapErr("add", err)
	}
	if exists > 0 {
		return region.Region{}, fmt.Errorf("%w: %q", store.ErrExists, name)
	}
	if next > region.MaxNumber {
		return region.Region{}, store.ErrFull
	}
	r := region.Region{Number: next, Name: name, Peer: peer, Status: region.Active, AddedAt: at.UTC().Truncate(time.Millisecond)}
	if _, err := tx.ExecContext(ctx, `INSERT INTO regions (number, name, peer, status, added_at) VALUES (?, ?, ?, ?, ?)`,
		r.Number, r.Name, r.Peer, r.Status, r.AddedAt.UnixMilli()); err != nil {
		return region.Region{}, s.mapErr("add", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = ? WHERE key = 'next_number'`, strconv.Itoa(next+1)); err != nil {
		return region.Region{}, s.mapErr("add", err)
	}
	if err := tx.Commit(); err != nil {
		return region.Region{}, s.mapErr("add", err)
	}
	return r, nil
}

// Retire implements store.Store.
func (s *Store) Retire(ctx context.Context, name string, at time.Time) (region.Region, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE regions SET status = ?, retired_at = ? WHERE name = ? AND status = ?`,
		region.Retired, at.UnixMilli(), name, region.Active)
	if err != nil {
		return region.Region{}, s.mapErr("retire", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return region.Region{}, s.mapErr("retire", err)
	}
	r, err := s.Get(ctx, name)
	if err != nil {
		return r, err
	}
	if n == 0 {
		return r, fmt.Errorf("%w: %q", store.ErrRetired, name)
	}
	return r, nil
}

// Schedule implements store.Store.
func (s *Store) Schedule(ctx context.Context) (string, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'schedule'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", store.ErrNotSeeded
	}
	return v, s.mapErr("schedule", err)
}

// NextNumber implements store.Store.
func (s *Store) NextNumber(ctx context.Context) (int, error) {
	n, err := nextNumber(ctx, s.db)
	return n, s.mapErr("next number", err)
}

// nextNumber reads the counter that Seed writes (store.ErrNotSeeded before).
func nextNumber(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}) (int, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'next_number'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, store.ErrNotSeeded
	}
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}

// Audit implements store.Store.
func (s *Store) Audit(ctx context.Context, e store.AuditEntry) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO audit (at, actor, action, detail) VALUES (?, ?, ?, ?)`, e.At.UnixMilli(), e.Actor, e.Action, e.Detail)
	return s.mapErr("audit", err)
}

// AuditLog implements store.Store.
func (s *Store) AuditLog(ctx context.Context) ([]store.AuditEntry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT at, actor, action, detail FROM audit ORDER BY id`)
	if err != nil {
		return nil, s.mapErr("audit log", err)
	}
	defer rows.Close()
	var out []store.AuditEntry
	for rows.Next() {
		var e store.AuditEntry
		var at int64
		if err := rows.Scan(&at, &e.Actor, &e.Action, &e.Detail); err != nil {
			return nil, s.mapErr("audit log", err)
		}
		e.At = time.UnixMilli(at).UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.mapErr("audit log", err)
	}
	return out, nil
}

// Close implements store.Store. Calls after Close fail with store.ErrUnavailable.
func (s *Store) Close() error {
	s.closed.Store(true)
	return s.db.Close()
}
