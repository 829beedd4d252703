// Package sqlitemap is the embedded mapping store: one SQLite table with both directions unique,
// so a publish is one atomic insert.
package sqlitemap

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/idgen/idgen/libs/conn/sqlitedsn"
	"github.com/idgen/idgen/services/public-id/mapping"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Store is a mapping store in an SQLite file.
type Store struct {
	db     *sql.DB
	closed atomic.Bool // after Close, every call fails with mapping.ErrUnavailable
}

var _ mapping.Store = (*Store)(nil)

// Open opens (creating when missing) the file at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sql.Open("sqlite", sqlitedsn.DSN(path, sqlitedsn.Options{}))
	if err != nil {
		return nil, fmt.Errorf("sqlitemap: open %s: %w", path, err)
	}
	s := &Store{db: db}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS public_ids (
		public TEXT PRIMARY KEY, internal INTEGER NOT NULL UNIQUE) WITHOUT ROWID`); err != nil {
		db.Close()
		return nil, s.mapErr("create table", err)
	}
	return s, nil
}

// mapErr is the driver's one error mapping: what sqlitedsn.Unavailable reports (busy, locked,
// I/O, can't open, a deadline), and any error of a closed store, becomes mapping.ErrUnavailable;
// the native error stays wrapped, so errors.As still reaches it. Other errors (a corrupt file, a
// constraint) stay plain errors.
func (s *Store) mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if sqlitedsn.Unavailable(err) || s.closed.Load() {
		return fmt.Errorf("sqlitemap: %s: %w: %w", op, mapping.ErrUnavailable, err)
	}
	return fmt.Errorf("sqlitemap: %s: %w", op, err)
}

// Publish implements mapping.Store.
func (s *Store) Publish(ctx context.Context, internal int64, newPublic func() (string, error)) (string, error) {
	for range 5 {
		pub, err := s.Lookup(ctx, internal)
		if !errors.Is(err, mapping.ErrNotFound) {
			return pub, err
		}
		if pub, err = newPublic(); err != nil {
			return "", fmt.Errorf("sqlitemap: new public ID: %w", err)
		}
		// Either direction already taken (a concurrent publish of the same internal ID, or a
		// colliding public ID) inserts nothing; the loop then reads the winner or tries again.
		if _, err := s.db.ExecContext(ctx, `INSERT INTO public_ids (public, internal) VALUES (?, ?) ON CONFLICT DO NOTHING`, pub, internal); err != nil {
			return "", s.mapErr("publish", err)
		}
	}
	return "", errors.New("sqlitemap: could not publish after 5 attempts")
}

// Lookup implements mapping.Store.
func (s *Store) Lookup(ctx context.Context, internal int64) (string, error) {
	var pub string
	err := s.db.QueryRowContext(ctx, `SELECT public FROM public_ids WHERE internal = ?`, internal).Scan(&pub)
	if errors.Is(err, sql.ErrNoRows) {
		return "", mapping.ErrNotFound
	}
	return pub, s.mapErr("lookup", err)
}

// Resolve implements mapping.Store.
func (s *Store) Resolve(ctx context.Context, public string) (int64, error) {
	var internal int64
	err := s.db.QueryRowContext(ctx, `SELECT internal FROM public_ids WHERE public = ?`, public).Scan(&internal)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, mapping.ErrNotFound
	}
	return internal, s.mapErr("resolve", err)
}

// Close implements mapping.Store. Calls after Close fail with mapping.ErrUnavailable.
// Volatile is never true: a commit is on disk (synchronous=FULL) before Publish returns.
func (s *Store) Volatile() (bool, string) { return false, "" }

// ReadsDurable is always true: a read answers committed rows only.
func (s *Store) ReadsDurable() bool { return true }

func (s *Store) Close() error {
	s.closed.Store(true)
	return s.db.Close()
}
