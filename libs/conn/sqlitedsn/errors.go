package sqlitedsn

import (
	"context"
	"database/sql/driver"
	"errors"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Unavailable reports whether err means the SQLite file could not serve the call now, so that a
// retry may succeed: another connection held the lock past the busy timeout (SQLITE_BUSY,
// SQLITE_LOCKED), the disk failed or filled (SQLITE_IOERR, SQLITE_FULL), the file could not be
// opened or written (SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_PERM), the statement was
// interrupted, or the caller's deadline passed. A constraint, a syntax error or a corrupt file is
// not unavailability. A nil err is not unavailable.
//
// Each store maps what this reports to its own portable error, once, at its boundary.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL,
			sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_INTERRUPT:
			return true
		}
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, driver.ErrBadConn)
}
