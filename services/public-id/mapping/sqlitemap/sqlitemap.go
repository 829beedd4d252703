// Package sqlitemap is the embedded mapping store: one SQLite table with both directions unique,
// so a publish is one atomic insert.
//
// Tokens are a second table, tokens (handle, value, expires_at in Unix milliseconds, indexed):
// GetToken answers a row only before its expires_at. Expired rows are deleted lazily, by the
// GetToken that finds one, and by a sweep every minute that deletes at most 10 batches of 1,000
// of them, each batch its own short write transaction, so publishes are never held up long.
// Tokens are committed as mappings are (synchronous=FULL): as durable.
//
// Secrets are a third table, secrets (name, value): an insert that does nothing when the name is
// taken, then a read of what it holds, so every caller gets the value inserted first.
package sqlitemap

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idgen/idgen/libs/conn/sqlitedsn"
	"github.com/idgen/idgen/services/public-id/mapping"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Store is a mapping store in an SQLite file.
type Store struct {
	db     *sql.DB
	closed atomic.Bool // after Close, every call fails with mapping.ErrUnavailable
	now    func() time.Time
	stop   chan struct{} // closed by Close: the sweep ends
	once   sync.Once
	sweeps sync.WaitGroup
}

// The sweep of expired tokens: every sweepEvery, batches of sweepBatch rows, at most sweepBatches
// of them (the rest wait for the next sweep, or for the GetToken that finds them).
const (
	sweepEvery   = time.Minute
	sweepBatch   = 1000
	sweepBatches = 10
)

var _ mapping.Store = (*Store)(nil)

// Open opens (creating when missing) the file at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sql.Open("sqlite", sqlitedsn.DSN(path, sqlitedsn.Options{}))
	if err != nil {
		return nil, fmt.Errorf("sqlitemap: open %s: %w", path, err)
	}
	s := &Store{db: db, now: time.Now, stop: make(chan struct{})}
	for _, stmt := range []string{
		`CREATE TABLE IF NOT EXISTS public_ids (public TEXT PRIMARY KEY, internal INTEGER NOT NULL UNIQUE) WITHOUT ROWID`,
		`CREATE TABLE IF NOT EXISTS tokens (handle TEXT PRIMARY KEY, value BLOB NOT NULL, expires_at INTEGER NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS tokens_by_expiry ON tokens (expires_at)`,
		`CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			db.Close()
			return nil, s.mapErr("create table", err)
		}
	}
	s.sweeps.Go(s.sweepEvery)
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

// Volatile is never true: a commit is on disk (synchronous=FULL) before Publish returns.
func (s *Store) Volatile() (bool, string) { return false, "" }

// ReadsDurable is always true: a read answers committed rows only.
func (s *Store) ReadsDurable() bool { return true }

// PutToken implements mapping.Store: one insert, which replaces only an expired row.
func (s *Store) PutToken(ctx context.Context, handle string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("sqlitemap: put token: ttl %v: want a positive duration", ttl)
	}
	now := s.now()
	expires := now.Add(ttl + time.Millisecond - 1).UnixMilli() // ttl rounded up to a millisecond
	res, err := s.db.ExecContext(ctx, `INSERT INTO tokens (handle, value, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (handle) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
		WHERE tokens.expires_at <= ?`, handle, value, expires, now.UnixMilli())
	if err != nil {
		return s.mapErr("put token", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.mapErr("put token", err)
	} else if n == 0 {
		return fmt.Errorf("sqlitemap: put token: %w", mapping.ErrTokenTaken)
	}
	return nil
}

// GetToken implements mapping.Store. An expired row is deleted by the call that finds it.
func (s *Store) GetToken(ctx context.Context, handle string) ([]byte, error) {
	var value []byte
	var expires int64
	err := s.db.QueryRowContext(ctx, `SELECT value, expires_at FROM tokens WHERE handle = ?`, handle).Scan(&value, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, mapping.ErrNotFound
	}
	if err != nil {
		return nil, s.mapErr("get token", err)
	}
	if now := s.now().UnixMilli(); expires <= now {
		// Best effort: what this delete misses, the sweep deletes.
		_, _ = s.db.ExecContext(ctx, `DELETE FROM tokens WHERE handle = ? AND expires_at <= ?`, handle, now)
		return nil, mapping.ErrNotFound
	}
	if value == nil {
		value = []byte{}
	}
	return value, nil
}

// Secret implements mapping.Store: an insert that keeps an existing row, then a read.
func (s *Store) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("sqlitemap: secret %q: size %d: want a positive size", name, size)
	}
	fresh := make([]byte, size)
	_, _ = rand.Read(fresh) // crypto/rand.Read never fails
	if _, err := s.db.ExecContext(ctx, `INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT DO NOTHING`, name, fresh); err != nil {
		return nil, s.mapErr("secret", err)
	}
	var v []byte
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM secrets WHERE name = ?`, name).Scan(&v); err != nil {
		return nil, s.mapErr("secret", err)
	}
	if len(v) != size {
		return nil, fmt.Errorf("sqlitemap: secret %q holds %d bytes, want %d", name, len(v), size)
	}
	return v, nil
}

// sweepEvery deletes expired tokens every sweepEvery until Close.
func (s *Store) sweepEvery() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _ = s.sweep(ctx) // a sweep that fails (the file busy) is tried again at the next tick
		cancel()
	}
}

// sweep deletes expired tokens, at most sweepBatches batches of sweepBatch rows, and returns how
// many it deleted.
func (s *Store) sweep(ctx context.Context) (int64, error) {
	var total int64
	for range sweepBatches {
		res, err := s.db.ExecContext(ctx, `DELETE FROM tokens WHERE handle IN
			(SELECT handle FROM tokens WHERE expires_at <= ? LIMIT ?)`, s.now().UnixMilli(), sweepBatch)
		if err != nil {
			return total, s.mapErr("sweep tokens", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, s.mapErr("sweep tokens", err)
		}
		total += n
		if n < sweepBatch {
			break
		}
	}
	return total, nil
}

// Close implements mapping.Store: it stops the sweep of expired tokens and closes the file.
// Calls after Close fail with mapping.ErrUnavailable.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.once.Do(func() { close(s.stop) })
	s.sweeps.Wait()
	return s.db.Close()
}
