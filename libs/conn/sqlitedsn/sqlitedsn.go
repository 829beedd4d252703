// Package sqlitedsn builds the one DSN with which every SQLite store of the repository opens its
// file (driver modernc.org/sqlite, registered as "sqlite").
//
// The DSN sets a busy timeout (concurrent writers wait instead of failing with SQLITE_BUSY), the
// WAL journal (readers never block the writer), synchronous=FULL (a committed transaction
// survives a power loss) and BEGIN IMMEDIATE transactions (a transaction takes the write lock
// when it starts, so two read-then-write transactions cannot deadlock).
package sqlitedsn

import (
	"strconv"
	"strings"
)

// BusyTimeoutMs is how long a statement waits for another connection's lock before it fails
// with SQLITE_BUSY.
const BusyTimeoutMs = 10000

// Options are the DSN's choices beyond the defaults; the zero value is the defaults.
type Options struct {
	// ForeignKeys turns on foreign key enforcement (SQLite's default: off).
	ForeignKeys bool
}

// pathEscaper escapes what SQLite's URI file names and the driver's query split would otherwise
// read: % (SQLite decodes %XX), ? (starts the query) and # (starts a fragment).
var pathEscaper = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

// DSN returns the DSN of the SQLite file at path, for sql.Open("sqlite", DSN(path, o)).
func DSN(path string, o Options) string {
	dsn := "file:" + pathEscaper.Replace(path) +
		"?_pragma=busy_timeout(" + strconv.Itoa(BusyTimeoutMs) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	if o.ForeignKeys {
		dsn += "&_pragma=foreign_keys(1)"
	}
	return dsn + "&_txlock=immediate"
}
