package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
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
	// ErrRules: a holder's lease settings differ from the rules in the table's metadata row, or
	// the rules a command would write differ from those already there.
	ErrRules = errors.New("lease: settings differ from the lease table's rules")
	// ErrNoRules: neither the table's metadata row nor its history holds the table's rules.
	ErrNoRules = errors.New("lease: the lease table holds no rules")
)

// Rules are a lease table's timing rules, held in its metadata row: every holder of the table
// uses this lease length and fence margin and renews within these bounds, and every operator
// command that writes an expiry (lift, the restore fence) reads them from there
// (docs/leases.md#the-tables-rules).
type Rules struct {
	Lease    time.Duration
	RenewMin time.Duration
	RenewMax time.Duration
	Margin   time.Duration
}

// IsZero reports whether no rules are set.
func (r Rules) IsZero() bool { return r == Rules{} }

func (r Rules) String() string {
	return fmt.Sprintf("lease %v, renew %v-%v, fence margin %v", r.Lease, r.RenewMin, r.RenewMax, r.Margin)
}

// Validate checks that every holder within the rules is safe: a renewal interval at most a third
// of the lease, and a margin positive and below lease − the longest renewal interval.
func (r Rules) Validate() error {
	switch {
	case r.Lease <= 0 || r.Lease%time.Millisecond != 0 || r.Margin%time.Millisecond != 0 ||
		r.RenewMin%time.Millisecond != 0 || r.RenewMax%time.Millisecond != 0:
		return fmt.Errorf("lease rules %v: durations must be positive whole milliseconds", r)
	case r.RenewMin <= 0 || r.RenewMin > r.RenewMax || r.RenewMax*3 > r.Lease:
		return fmt.Errorf("lease rules %v: the renew bounds must be positive, low to high, and at most a third of the lease", r)
	case r.Margin <= 0 || r.Margin >= r.Lease-r.RenewMax:
		return fmt.Errorf("lease rules %v: the fence margin must be positive and below lease − the longest renewal (%v)", r, r.Lease-r.RenewMax)
	}
	return nil
}

// DefaultRules are the rules written for a lease length and margin when no renew bounds are
// given: renewals from a thirtieth to a third of the lease (5 min: 10 s to 100 s), the upper
// bound lowered until the margin fits, and widened to include renew when it is given (> 0).
func DefaultRules(lease, renew, margin time.Duration) Rules {
	r := Rules{Lease: lease, Margin: margin,
		RenewMin: (lease / 30).Truncate(time.Millisecond), RenewMax: (lease / 3).Truncate(time.Millisecond)}
	if r.Margin >= r.Lease-r.RenewMax {
		r.RenewMax = ((r.Lease - r.Margin) / 2).Truncate(time.Millisecond)
	}
	if renew > 0 {
		r.RenewMin, r.RenewMax = min(r.RenewMin, renew), max(r.RenewMax, renew)
	}
	if r.RenewMin > r.RenewMax {
		r.RenewMin = r.RenewMax
	}
	return r
}

// Settings are one holder's lease settings (lease.Config's Lease, Renew and FenceMargin).
type Settings struct {
	Lease, Renew, Margin time.Duration
}

// Admits returns nil when a holder with settings h keeps the rules, else an ErrRules error
// naming each value that differs beside the table's.
func (r Rules) Admits(h Settings) error {
	var diff []string
	if h.Lease != r.Lease {
		diff = append(diff, fmt.Sprintf("lease %v (the table's: %v)", h.Lease, r.Lease))
	}
	if h.Margin != r.Margin {
		diff = append(diff, fmt.Sprintf("fence margin %v (the table's: %v)", h.Margin, r.Margin))
	}
	if h.Renew < r.RenewMin || h.Renew > r.RenewMax {
		diff = append(diff, fmt.Sprintf("renew %v (the table's: %v-%v)", h.Renew, r.RenewMin, r.RenewMax))
	}
	if len(diff) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s; every holder of a table uses its rules (idgenctl leases list shows them, leases set-rules changes them while no number is held)",
		ErrRules, strings.Join(diff, ", "))
}

// Meta is a lease table's metadata row: the table identity it was created or last fenced under
// ("" when the row was written for a restored table that still awaits its fence), and its rules.
type Meta struct {
	TableID string
	Rules   Rules
}

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
	// Table is the lease table's name, which the driver writes (the history table is shared by
	// a region's lease tables: v1 and v2 in a v1-v2 schedule). Events written before tables were
	// named have "".
	Table string
	// TableID is the table ID the metadata row named when the event was written ("" where no
	// metadata row existed yet).
	TableID string
	// Rules are the rules a KindRules event wrote (zero for the other kinds).
	Rules Rules
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
	// KindRules: the table's rules were written (machine MetaMachine). The restore fence takes
	// the rules from the last one when a restored table's metadata row has none.
	KindRules EventKind = "rules"
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
	// Meta returns the metadata row (its table ID, its rules; either may be unset), or
	// ErrNotFound when there is none.
	Meta(ctx context.Context) (Meta, error)
	// InitMeta must write the metadata row (table ID and rules) only when it is absent (else
	// ErrTaken).
	InitMeta(ctx context.Context, m Meta) error
	// InitRules must set the rules of a metadata row that exists and has none (a table from
	// before rules were kept); otherwise change nothing and return ErrTaken.
	InitRules(ctx context.Context, r Rules) error
	// SetRules must replace the rules only when the metadata row holds exactly old (else
	// ErrTaken).
	SetRules(ctx context.Context, old, r Rules) error
	// SetMeta must write the metadata row's table ID unconditionally, and its rules too unless
	// m.Rules is zero (then they stay as they are): the restore fence's last step.
	SetMeta(ctx context.Context, m Meta) error

	// AppendHistory must add ev to the history, naming this lease table (Event.Table), without
	// overwriting another event (two events of one number in one millisecond are both kept).
	AppendHistory(ctx context.Context, ev Event) error
	// History returns the events of one number of this lease table (and those written before
	// events named their table) with fromUnixMs ≤ AtUnixMs ≤ toUnixMs, oldest first.
	History(ctx context.Context, machine int, fromUnixMs, toUnixMs int64) ([]Event, error)
	// HasHistory reports whether the history holds any event naming this lease table; another
	// table's events (the other lease table sharing the history) never count. A lease table with
	// neither lease rows nor a metadata row beside a history with its events is a restore (of a
	// backup taken before the table's first claim) or a re-creation, not a new table.
	HasHistory(ctx context.Context) (bool, error)

	// Close releases the driver's resources.
	Close() error
}
