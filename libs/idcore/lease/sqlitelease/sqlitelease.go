// Package sqlitelease is the embedded lease store: an SQLite file (pure Go, no cgo) that several
// processes on one host may share. Every rule of the lease.Store contract is one SQL statement,
// so it is atomic across processes; WAL and a busy timeout make concurrent writers wait, not fail.
package sqlitelease

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idgen/idgen/libs/conn/sqlitedsn"
	"github.com/idgen/idgen/libs/idcore/lease"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Store is a lease table (and the shared history table) in an SQLite file.
type Store struct {
	db     *sql.DB
	path   string
	table  string
	closed atomic.Bool // after Close, every call fails with lease.ErrUnavailable
}

var _ lease.Store = (*Store)(nil)

// Open opens (creating when missing) the file at path and the lease table named table in it
// (lease.TableV2, lease.TableV1, or any other name), with the history table beside it.
func Open(ctx context.Context, path, table string) (*Store, error) {
	if strings.ContainsAny(table, "\"\x00") || table == "" {
		return nil, fmt.Errorf("sqlitelease: bad table name %q", table)
	}
	db, err := sql.Open("sqlite", sqlitedsn.DSN(path, sqlitedsn.Options{}))
	if err != nil {
		return nil, fmt.Errorf("sqlitelease: open %s: %w", path, err)
	}
	s := &Store{db: db, path: path, table: table}
	if err := s.create(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Path is the file the store is in.
func (s *Store) Path() string { return s.path }

func (s *Store) q(query string) string {
	return strings.ReplaceAll(strings.ReplaceAll(query, "$T", `"`+s.table+`"`), "$H", `"`+lease.TableHistory+`"`)
}

func (s *Store) create(ctx context.Context) error {
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS $T (
			machine_id   INTEGER PRIMARY KEY,
			holder       TEXT    NOT NULL DEFAULT '',
			lease_expiry INTEGER NOT NULL DEFAULT 0,
			lease_epoch  INTEGER NOT NULL DEFAULT 0,
			table_id     TEXT,
			lease_ms     INTEGER,
			renew_min_ms INTEGER,
			renew_max_ms INTEGER,
			margin_ms    INTEGER)`,
		`CREATE TABLE IF NOT EXISTS $H (
			machine_id   INTEGER NOT NULL,
			at           INTEGER NOT NULL,
			event        TEXT    NOT NULL,
			holder       TEXT    NOT NULL,
			lease_epoch  INTEGER NOT NULL,
			lease_expiry INTEGER NOT NULL,
			expires_at   INTEGER NOT NULL,
			lease_table  TEXT    NOT NULL DEFAULT '',
			table_id     TEXT    NOT NULL DEFAULT '',
			lease_ms     INTEGER NOT NULL DEFAULT 0,
			renew_min_ms INTEGER NOT NULL DEFAULT 0,
			renew_max_ms INTEGER NOT NULL DEFAULT 0,
			margin_ms    INTEGER NOT NULL DEFAULT 0,
			PRIMARY KEY (machine_id, at))`,
		`CREATE TABLE IF NOT EXISTS "idgen-incarnations" (
			table_name  TEXT PRIMARY KEY,
			incarnation TEXT NOT NULL)`,
	}
	for _, q := range stmts {
		if _, err := s.db.ExecContext(ctx, s.q(q)); err != nil {
			return s.mapErr("create tables", err)
		}
	}
	// Files made before the tables' rules were kept and history events named their table.
	for _, c := range []struct{ table, col, def string }{
		{"$T", "lease_ms", "INTEGER"}, {"$T", "renew_min_ms", "INTEGER"}, {"$T", "renew_max_ms", "INTEGER"}, {"$T", "margin_ms", "INTEGER"},
		{"$H", "lease_table", "TEXT NOT NULL DEFAULT ''"}, {"$H", "table_id", "TEXT NOT NULL DEFAULT ''"},
		{"$H", "lease_ms", "INTEGER NOT NULL DEFAULT 0"}, {"$H", "renew_min_ms", "INTEGER NOT NULL DEFAULT 0"},
		{"$H", "renew_max_ms", "INTEGER NOT NULL DEFAULT 0"}, {"$H", "margin_ms", "INTEGER NOT NULL DEFAULT 0"},
	} {
		_, err := s.db.ExecContext(ctx, s.q(`ALTER TABLE `+c.table+` ADD COLUMN `+c.col+` `+c.def))
		if err != nil && !strings.Contains(err.Error(), "duplicate column") {
			return s.mapErr("add column "+c.col, err)
		}
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO "idgen-incarnations" (table_name, incarnation) VALUES (?, ?)
		ON CONFLICT (table_name) DO NOTHING`, s.table, newIncarnation())
	return s.mapErr("create incarnation", err)
}

func newIncarnation() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "sqlite-" + hex.EncodeToString(b)
}

// Recreate drops the lease table and creates it anew, empty, with a new incarnation ID: what a
// DynamoDB restore does to the TableId (tests and development only).
func (s *Store) Recreate(ctx context.Context, rows []lease.Row) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.mapErr("recreate", err)
	}
	defer tx.Rollback()
	for _, q := range []string{`DELETE FROM $T`, `DELETE FROM "idgen-incarnations" WHERE table_name = ?`} {
		args := []any{}
		if strings.Contains(q, "?") {
			args = append(args, s.table)
		}
		if _, err := tx.ExecContext(ctx, s.q(q), args...); err != nil {
			return s.mapErr("recreate", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO "idgen-incarnations" (table_name, incarnation) VALUES (?, ?)`, s.table, newIncarnation()); err != nil {
		return s.mapErr("recreate", err)
	}
	for _, r := range rows {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO $T (machine_id, holder, lease_expiry, lease_epoch) VALUES (?, ?, ?, ?)`),
			r.Machine, r.Holder, r.ExpiryUnixMs, r.Epoch); err != nil {
			return s.mapErr("recreate", err)
		}
	}
	return s.mapErr("recreate", tx.Commit())
}

// Claim implements lease.Store.
func (s *Store) Claim(ctx context.Context, machine int, holder string, now, expiry int64) (lease.Row, error) {
	if machine < 0 {
		return lease.Row{}, fmt.Errorf("sqlitelease: machine %d", machine)
	}
	r := lease.Row{Machine: machine}
	err := s.db.QueryRowContext(ctx, s.q(`INSERT INTO $T (machine_id, holder, lease_expiry, lease_epoch) VALUES (?1, ?2, ?3, 1)
		ON CONFLICT (machine_id) DO UPDATE SET holder = ?2, lease_expiry = ?3, lease_epoch = lease_epoch + 1
		WHERE lease_expiry < ?4
		RETURNING holder, lease_expiry, lease_epoch`), machine, holder, expiry, now).Scan(&r.Holder, &r.ExpiryUnixMs, &r.Epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return lease.Row{}, lease.ErrTaken
	}
	return r, s.mapErr("claim", err)
}

// Renew implements lease.Store.
func (s *Store) Renew(ctx context.Context, machine int, holder string, epoch, newExpiry int64) error {
	return s.execOne(ctx, "renew", lease.ErrLost, `UPDATE $T SET lease_expiry = ?4
		WHERE machine_id = ?1 AND holder = ?2 AND lease_epoch = ?3 AND lease_expiry < ?4`, machine, holder, epoch, newExpiry)
}

// Release implements lease.Store.
func (s *Store) Release(ctx context.Context, machine int, holder string, epoch, expiry int64) error {
	return s.execOne(ctx, "release", lease.ErrLost, `UPDATE $T SET lease_expiry = ?4
		WHERE machine_id = ?1 AND holder = ?2 AND lease_epoch = ?3`, machine, holder, epoch, expiry)
}

func (s *Store) execOne(ctx context.Context, op string, none error, query string, args ...any) error {
	res, err := s.db.ExecContext(ctx, s.q(query), args...)
	if err != nil {
		return s.mapErr(op, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.mapErr(op, err)
	} else if n == 0 {
		return none
	}
	return nil
}

// Get implements lease.Store.
func (s *Store) Get(ctx context.Context, machine int) (lease.Row, error) {
	if machine < 0 {
		return lease.Row{}, lease.ErrNotFound
	}
	r := lease.Row{Machine: machine}
	err := s.db.QueryRowContext(ctx, s.q(`SELECT holder, lease_expiry, lease_epoch FROM $T WHERE machine_id = ?`), machine).
		Scan(&r.Holder, &r.ExpiryUnixMs, &r.Epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return lease.Row{}, lease.ErrNotFound
	}
	return r, s.mapErr("get", err)
}

// List implements lease.Store.
func (s *Store) List(ctx context.Context) ([]lease.Row, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT machine_id, holder, lease_expiry, lease_epoch FROM $T WHERE machine_id >= 0 ORDER BY machine_id`))
	if err != nil {
		return nil, s.mapErr("list", err)
	}
	defer rows.Close()
	var out []lease.Row
	for rows.Next() {
		var r lease.Row
		if err := rows.Scan(&r.Machine, &r.Holder, &r.ExpiryUnixMs, &r.Epoch); err != nil {
			return nil, s.mapErr("list", err)
		}
		out = append(out, r)
	}
	return out, s.mapErr("list", rows.Err())
}

// Quarantine implements lease.Store.
func (s *Store) Quarantine(ctx context.Context, machine int) (lease.Row, error) {
	r := lease.Row{Machine: machine}
	err := s.db.QueryRowContext(ctx, s.q(`INSERT INTO $T (machine_id, holder, lease_expiry, lease_epoch) VALUES (?1, ?2, ?3, 1)
		ON CONFLICT (machine_id) DO UPDATE SET holder = ?2, lease_expiry = ?3, lease_epoch = lease_epoch + 1
		RETURNING holder, lease_expiry, lease_epoch`), machine, lease.QuarantineHolder, lease.QuarantineExpiryUnixMs).
		Scan(&r.Holder, &r.ExpiryUnixMs, &r.Epoch)
	return r, s.mapErr("quarantine", err)
}

// Lift implements lease.Store.
func (s *Store) Lift(ctx context.Context, machine int, expiry int64) (lease.Row, error) {
	r := lease.Row{Machine: machine}
	err := s.db.QueryRowContext(ctx, s.q(`UPDATE $T SET holder = ?3, lease_expiry = ?4, lease_epoch = lease_epoch + 1
		WHERE machine_id = ?1 AND holder = ?2
		RETURNING holder, lease_expiry, lease_epoch`), machine, lease.QuarantineHolder, lease.LiftedHolder, expiry).
		Scan(&r.Holder, &r.ExpiryUnixMs, &r.Epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return lease.Row{}, lease.ErrLost
	}
	return r, s.mapErr("lift", err)
}

// FenceAll implements lease.Store.
func (s *Store) FenceAll(ctx context.Context, expiry int64) (int, error) {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE $T SET lease_expiry = ?, lease_epoch = lease_epoch + 1
		WHERE machine_id >= 0 AND holder <> ?`), expiry, lease.QuarantineHolder)
	if err != nil {
		return 0, s.mapErr("fence", err)
	}
	n, err := res.RowsAffected()
	return int(n), s.mapErr("fence", err)
}

// TableID implements lease.Store: the table's incarnation ID.
func (s *Store) TableID(ctx context.Context) (string, error) {
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT incarnation FROM "idgen-incarnations" WHERE table_name = ?`, s.table).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", lease.ErrNotFound
	}
	return id, s.mapErr("table id", err)
}

// Meta implements lease.Store.
func (s *Store) Meta(ctx context.Context) (lease.Meta, error) {
	var id sql.NullString
	var l, rmin, rmax, m sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT table_id, lease_ms, renew_min_ms, renew_max_ms, margin_ms FROM $T WHERE machine_id = ?`),
		lease.MetaMachine).Scan(&id, &l, &rmin, &rmax, &m)
	if errors.Is(err, sql.ErrNoRows) {
		return lease.Meta{}, lease.ErrNotFound
	}
	if err != nil {
		return lease.Meta{}, s.mapErr("meta", err)
	}
	out := lease.Meta{TableID: id.String}
	if l.Valid {
		out.Rules = lease.Rules{Lease: ms(l.Int64), RenewMin: ms(rmin.Int64), RenewMax: ms(rmax.Int64), Margin: ms(m.Int64)}
	}
	return out, nil
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// rulesArgs are the rules as the four millisecond columns (NULL when r is zero).
func rulesArgs(r lease.Rules) []any {
	if r.IsZero() {
		return []any{nil, nil, nil, nil}
	}
	return []any{r.Lease.Milliseconds(), r.RenewMin.Milliseconds(), r.RenewMax.Milliseconds(), r.Margin.Milliseconds()}
}

// InitMeta implements lease.Store.
func (s *Store) InitMeta(ctx context.Context, m lease.Meta) error {
	return s.execOne(ctx, "init meta", lease.ErrTaken, `INSERT INTO $T (machine_id, holder, table_id, lease_ms, renew_min_ms, renew_max_ms, margin_ms)
		VALUES (?, 'METADATA', ?, ?, ?, ?, ?) ON CONFLICT (machine_id) DO NOTHING`, append([]any{lease.MetaMachine, m.TableID}, rulesArgs(m.Rules)...)...)
}

// InitRules implements lease.Store.
func (s *Store) InitRules(ctx context.Context, r lease.Rules) error {
	return s.execOne(ctx, "init rules", lease.ErrTaken, `UPDATE $T SET lease_ms = ?, renew_min_ms = ?, renew_max_ms = ?, margin_ms = ?
		WHERE machine_id = ? AND lease_ms IS NULL`, append(rulesArgs(r), lease.MetaMachine)...)
}

// SetRules implements lease.Store.
func (s *Store) SetRules(ctx context.Context, old, r lease.Rules) error {
	return s.execOne(ctx, "set rules", lease.ErrTaken, `UPDATE $T SET lease_ms = ?, renew_min_ms = ?, renew_max_ms = ?, margin_ms = ?
		WHERE machine_id = ? AND lease_ms IS ? AND renew_min_ms IS ? AND renew_max_ms IS ? AND margin_ms IS ?`,
		append(append(rulesArgs(r), lease.MetaMachine), rulesArgs(old)...)...)
}

// SetMeta implements lease.Store.
func (s *Store) SetMeta(ctx context.Context, m lease.Meta) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO $T (machine_id, holder, table_id, lease_ms, renew_min_ms, renew_max_ms, margin_ms)
		VALUES (?1, 'METADATA', ?2, ?3, ?4, ?5, ?6)
		ON CONFLICT (machine_id) DO UPDATE SET table_id = ?2, lease_ms = coalesce(?3, lease_ms), renew_min_ms = coalesce(?4, renew_min_ms),
			renew_max_ms = coalesce(?5, renew_max_ms), margin_ms = coalesce(?6, margin_ms)`),
		append([]any{lease.MetaMachine, m.TableID}, rulesArgs(m.Rules)...)...)
	return s.mapErr("set meta", err)
}

// AppendHistory implements lease.Store.
func (s *Store) AppendHistory(ctx context.Context, ev lease.Event) error {
	for at := ev.AtUnixMs; at < ev.AtUnixMs+1000; at++ {
		res, err := s.db.ExecContext(ctx, s.q(`INSERT INTO $H (machine_id, at, event, holder, lease_epoch, lease_expiry, expires_at,
				lease_table, table_id, lease_ms, renew_min_ms, renew_max_ms, margin_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
			ev.Machine, at, string(ev.Kind), ev.Holder, ev.Epoch, ev.ExpiryUnixMs, (at+lease.HistoryRetentionMs)/1000,
			s.table, ev.TableID, ev.Rules.Lease.Milliseconds(), ev.Rules.RenewMin.Milliseconds(), ev.Rules.RenewMax.Milliseconds(), ev.Rules.Margin.Milliseconds())
		if err != nil {
			return s.mapErr("history", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil
		}
	}
	return fmt.Errorf("sqlitelease: history: no free millisecond after %d for machine %d", ev.AtUnixMs, ev.Machine)
}

// History implements lease.Store.
func (s *Store) History(ctx context.Context, machine int, from, to int64) ([]lease.Event, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT at, event, holder, lease_epoch, lease_expiry, lease_table, table_id,
			lease_ms, renew_min_ms, renew_max_ms, margin_ms FROM $H
		WHERE machine_id = ? AND at BETWEEN ? AND ? AND lease_table IN (?, '') ORDER BY at`), machine, from, to, s.table)
	if err != nil {
		return nil, s.mapErr("history", err)
	}
	defer rows.Close()
	var out []lease.Event
	for rows.Next() {
		ev := lease.Event{Machine: machine}
		var kind string
		var l, rmin, rmax, m int64
		if err := rows.Scan(&ev.AtUnixMs, &kind, &ev.Holder, &ev.Epoch, &ev.ExpiryUnixMs, &ev.Table, &ev.TableID, &l, &rmin, &rmax, &m); err != nil {
			return nil, s.mapErr("history", err)
		}
		ev.Rules = lease.Rules{Lease: ms(l), RenewMin: ms(rmin), RenewMax: ms(rmax), Margin: ms(m)}
		ev.Kind = lease.EventKind(kind)
		out = append(out, ev)
	}
	return out, s.mapErr("history", rows.Err())
}

// HasHistory implements lease.Store.
func (s *Store) HasHistory(ctx context.Context) (bool, error) {
	var one int
	err := s.db.QueryRowContext(ctx, s.q(`SELECT 1 FROM $H WHERE lease_table = ? LIMIT 1`), s.table).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, s.mapErr("history", err)
}

// Close implements lease.Store. Calls after Close fail with lease.ErrUnavailable.
func (s *Store) Close() error {
	s.closed.Store(true)
	return s.db.Close()
}

// mapErr is the driver's one error mapping: what sqlitedsn.Unavailable reports (busy, locked,
// I/O, can't open, a deadline), and any error of a closed store, becomes lease.ErrUnavailable;
// the native error stays wrapped, so errors.As still reaches it.
func (s *Store) mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if sqlitedsn.Unavailable(err) || s.closed.Load() {
		return fmt.Errorf("sqlitelease: %s: %w: %w", op, lease.ErrUnavailable, err)
	}
	return fmt.Errorf("sqlitelease: %s: %w", op, err)
}
