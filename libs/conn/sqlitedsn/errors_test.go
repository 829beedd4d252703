package sqlitedsn_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/conn/sqlitedsn"
)

// TestUnavailable holds the write lock from one connection and writes from another, as two
// processes sharing the file do, and checks what Unavailable reports for real SQLite errors.
func TestUnavailable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	open := func() *sql.DB {
		t.Helper()
		db, err := sql.Open("sqlite", sqlitedsn.DSN(path, sqlitedsn.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	holder, other := open(), open()
	if _, err := holder.ExecContext(ctx, `CREATE TABLE t (x INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}

	if _, err := other.ExecContext(ctx, `INSERT INTO t VALUES (1)`); err == nil || sqlitedsn.Unavailable(err) {
		t.Errorf("a unique constraint: %v; Unavailable must be false", err)
	}
	if _, err := other.ExecContext(ctx, `INSERT INTO nosuchtable VALUES (1)`); err == nil || sqlitedsn.Unavailable(err) {
		t.Errorf("a missing table: %v; Unavailable must be false", err)
	}
	if sqlitedsn.Unavailable(nil) || sqlitedsn.Unavailable(sql.ErrNoRows) || sqlitedsn.Unavailable(errors.New("x")) {
		t.Error("Unavailable is true for nil, sql.ErrNoRows or a plain error")
	}

	lock, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := lock.ExecContext(ctx, `ROLLBACK`); err != nil {
			t.Error(err)
		}
	}()

	// The busy timeout cut short by the caller's deadline.
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := other.ExecContext(dctx, `INSERT INTO t VALUES (2)`); !sqlitedsn.Unavailable(err) {
		t.Errorf("a write under another connection's lock, past the deadline: %v; Unavailable must be true", err)
	}
	// SQLITE_BUSY itself, from a connection that does not wait.
	c, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `PRAGMA busy_timeout = 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, `INSERT INTO t VALUES (3)`); !sqlitedsn.Unavailable(err) {
		t.Errorf("a write under another connection's lock: %v; Unavailable must be true", err)
	}
}
