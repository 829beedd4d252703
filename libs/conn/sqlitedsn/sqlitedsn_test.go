package sqlitedsn_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/idgen/idgen/libs/conn/sqlitedsn"
	_ "modernc.org/sqlite"
)

func TestDSN(t *testing.T) {
	for _, tt := range []struct {
		name string
		path string
		o    sqlitedsn.Options
		want string
	}{
		{"plain", "/var/lib/idgen/leases.db", sqlitedsn.Options{},
			"file:/var/lib/idgen/leases.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"},
		{"escaped", "/tmp/a%b?c#d.db", sqlitedsn.Options{},
			"file:/tmp/a%25b%3fc%23d.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"},
		{"foreign keys", "x.db", sqlitedsn.Options{ForeignKeys: true},
			"file:x.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := sqlitedsn.DSN(tt.path, tt.o); got != tt.want {
				t.Errorf("DSN(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

// TestOpen opens files whose names hold every escaped character and checks that SQLite created
// exactly those files with the pragmas applied.
func TestOpen(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"plain.db", "per%cent.db", "what?.db", "hash#tag.db", "sp ace.db", "%3f.db"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			db, err := sql.Open("sqlite", sqlitedsn.DSN(path, sqlitedsn.Options{ForeignKeys: true}))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(ctx, `CREATE TABLE t (x INTEGER)`); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("file %q not created: %v", path, err)
			}
			for pragma, want := range map[string]string{
				"journal_mode": "wal", "busy_timeout": "10000", "synchronous": "2", "foreign_keys": "1",
			} {
				var got string
				if err := db.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("PRAGMA %s = %q, want %q", pragma, got, want)
				}
			}
		})
	}
}
