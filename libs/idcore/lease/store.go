package lease

import (
	"context"
	"errors"
)

// Table names (docs/leases.md#tables). In DynamoDB the lease tables are region-local, never
// global tables.
const (
	// TableV2 is each region's v2 lease table.
	TableV2 = "idgen-leases-v2"
	// TableV1 is the one global v1 lease table (schedule v1-v2 only).
	TableV1 = "idgen-leases"
	// TableHistory is the append-only history of claims, releases and quarantines.
	TableHistory = "idgen-lease-history"
)

// Quarantine values (docs/leases.md#quarantine-and-lift): a row held by QuarantineHolder until
// QuarantineExpiry (2100-01-01) can be neither claimed nor renewed.
const (
	QuarantineHolder       = "QUARANTINED"
	QuarantineExpiryUnixMs = 4102444800000
	// LiftedHolder is the holder of a number whose quarantine was lifted, until someone claims it.
	LiftedHolder = "LIFTED"
	// FencedHolder holds, until the restore fence's expiry, a number that had no row in a
	// restored lease table (FenceRestore).
	FencedHolder = "FENCED"
)

// MetaMachine is the key of the metadata row of a lease table; no lease ever uses it.
const MetaMachine = -1

// HistoryRetentionMs is how long history rows are kept (TTL attribute expires_at): 400 days.
const HistoryRetentionMs = 400 * 24 * 3600 * 1000

// Portable errors. Drivers map their native errors to these.
var (
	// ErrTaken: a claim's condition failed (the number is held and not expired, or quarantined),
	// or a conditional create found the row already there.
	ErrTaken = errors.New("lease: number is taken")
	// ErrLost: a renewal or release's condition failed: the row is no longer this holder's
	// (another holder, another epoch, a quarantine, or a fence).
	ErrLost = errors.New("lease: lease lost")
	// ErrNotFound: no such row.
	ErrNotFound = errors.New("lease: not found")
	// ErrUnavailable: the store could not be reached or throttled the call; retrying may work.
	ErrUnavailable = errors.New("lease: store unavailable")
	// ErrRestored: the table is a restore (its metadata row names another table, or it holds
	// lease rows but no metadata row); nobody claims until the restore fence has run.
	ErrRestored = errors.New("lease: table restored from backup; run the restore fence first")
	// ErrNoFreeNumber: every number of the range is held.
	ErrNoFreeNumber = errors.New("lease: no free machine number in range")
)

// Row is one lease row.
type Row struct {
	Machine      int
	Holder       string
	ExpiryUnixMs int64
	Epoch        int64
}

// Quarantined reports whether the row is quarantined.
func (r Row) Quarantined() bool { return r.Holder == QuarantineHolder }

// Event is one history row: who held which number, from when, until when.
type Event struct {
	Machine      int
	AtUnixMs     int64
	Kind         EventKind
	Holder       string
	Epoch        int64
	ExpiryUnixMs int64
}

// EventKind says what a history event did; drivers store it as its string.
type EventKind string

// Event kinds (Event.Kind).
const (
	KindClaim      EventKind = "claim"
	KindRelease    EventKind = "release"
	KindQuarantine EventKind = "quarantine"
	KindLift       EventKind = "lift"
	KindFence      EventKind = "fence"
)

// Store is the driver contract for one lease table and its history table. Every method must be
// safe for concurrent use by many goroutines and, for shared stores, many processes.
type Store interface {
	// Claim must, atomically: when the row is absent or its lease_expiry < nowUnixMs, set holder,
	// lease_expiry = expiryUnixMs and lease_epoch = (old epoch or 0) + 1, and return the row as
	// written; otherwise change nothing and return ErrTaken. It must not touch MetaMachine.
	Claim(ctx context.Context, machine int, holder string, nowUnixMs, expiryUnixMs int64) (Row, error)
	// Renew must, atomically: when holder and epoch match and lease_expiry < newExpiryUnixMs, set
	// lease_expiry = newExpiryUnixMs; otherwise change nothing and return ErrLost (ErrLost also
	// when the row is absent).
	Renew(ctx context.Context, machine int, holder string, epoch, newExpiryUnixMs int64) error
	// Release must, atomically: when holder and epoch match, set lease_expiry = expiryUnixMs;
	// otherwise return ErrLost.
	Release(ctx context.Context, machine int, holder string, epoch, expiryUnixMs int64) error
	// Get returns one lease row, or ErrNotFound.
	Get(ctx context.Context, machine int) (Row, error)
	// List returns every lease row (never the metadata row), ordered by machine.
	List(ctx context.Context) ([]Row, error)
	// Quarantine must set holder QuarantineHolder, lease_expiry QuarantineExpiryUnixMs and
	// epoch + 1, whatever the row held (creating it if absent), and return the row.
	Quarantine(ctx context.Context, machine int) (Row, error)
	// Lift must, only for a quarantined row, set holder LiftedHolder, lease_expiry = expiryUnixMs
	// and epoch + 1; otherwise return ErrLost. Callers pass now + lease + margin (LiftExpiry): a
	// holder paused since before the quarantine may still issue up to its own fence, at most one
	// lease after its last renewal, so the next claimer's floor must lie above that.
	Lift(ctx context.Context, machine int, expiryUnixMs int64) (Row, error)
	// FenceAll must set lease_expiry = expiryUnixMs and epoch + 1 on every lease row that is not
	// quarantined, and return how many rows it changed (the restore fence).
	FenceAll(ctx context.Context, expiryUnixMs int64) (int, error)

	// TableID returns the identity of the lease table as it exists now: a restore (or a re-create)
	// changes it (DynamoDB: TableId; SQLite: the driver's incarnation ID).
	TableID(ctx context.Context) (string, error)
	// Meta returns the table ID named by the metadata row, or ErrNotFound when there is none.
	Meta(ctx context.Context) (string, error)
	// InitMeta must write the metadata row only when it is absent (else ErrTaken).
	InitMeta(ctx context.Context, tableID string) error
	// SetMeta must write the metadata row unconditionally (the restore fence's last step).
	SetMeta(ctx context.Context, tableID string) error

	// AppendHistory must add ev to the history without overwriting another event (two events of
	// one number in one millisecond are both kept).
	AppendHistory(ctx context.Context, ev Event) error
	// History returns the events of one number with fromUnixMs ≤ AtUnixMs ≤ toUnixMs, oldest first.
	History(ctx context.Context, machine int, fromUnixMs, toUnixMs int64) ([]Event, error)

	// Close releases the driver's resources.
	Close() error
}
