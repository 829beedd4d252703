// Package sqlitemap is the embedded mapping store: one SQLite table with both directions unique,
// so a publish is one atomic insert.
package sqlitemap

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/idgen/idgen/services/public-id/mapping"
	_ "modernc.org/sqlite"
)

// Store is a mapping store in an SQLite file.
type Store struct{ db *sql.DB }

var _ mapping.Store = (*Store)(nil)

// Open opens (creating when missing) the file at path.
func Open(ctx context.Context, path string) (*Store, error) {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	db, err := sql.Open("sqlite", "file:"+esc+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS public_ids (
		public TEXT PRIMARY KEY, internal INTEGER NOT NULL UNIQUE) WITHOUT ROWID`); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitemap: %w", err)
	}
	return &Store{db: db}, nil
}

// Publish implements mapping.Store.
func (s *Store) Publish(ctx context.Context, internal int64, newPublic func() (string, error)) (string, error) {
	for range 5 {
		pub, err := s.Lookup(ctx, internal)
		if !errors.Is(err, mapping.ErrNotFound) {
			return pub, err
		}
		if pub, err = newPublic(); err != nil {
			return "", err
		}
		// Either direction already taken (a concurrent publish of the same internal ID, or a
		// colliding public ID) inserts nothing; the loop then reads the winner or tries again.
		if _, err := s.db.ExecContext(ctx, `INSERT INTO public_ids (public, internal) VALUES (?, ?) ON CONFLICT DO NOTHING`, pub, internal); err != nil {
			return "", fmt.Errorf("%w: %v", mapping.ErrUnavailable, err)
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
	if err != nil {
		return "", fmt.Errorf("%w: %v", mapping.ErrUnavailable, err)
	}
	return pub, nil
}

// Resolve implements mapping.Store.
func (s *Store) Resolve(ctx context.Context, public string) (int64, error) {
	var internal int64
	err := s.db.QueryRowContext(ctx, `SELECT internal FROM public_ids WHERE public = ?`, public).Scan(&internal)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, mapping.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %v", mapping.ErrUnavailable, err)
	}
	return internal, nil
}

// Close implements mapping.Store.
func (s *Store) Close() error { return s.db.Close() }
