// Package store is the registry's storage contract: regions whose numbers are never reused, the
// layout schedule, and the audit log. Drivers: sqlitestore (embedded default) and dynamostore
// (DynamoDB region.RegistryTable, idgen-regions, in the home region); storetest is the conformance suite both pass.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/idgen/idgen/libs/idcore/region"
)

// Portable errors. Drivers map their native errors to these, wrapping the native error (so
// errors.As still reaches it); the service maps them to API codes with errors.Is, e.g.
// errors.Is(err, store.ErrUnavailable) → 503 Unavailable.
var (
	// ErrNotFound: no region of that name.
	ErrNotFound = errors.New("registry: no such region")
	// ErrExists: a region with that name exists (retired regions included).
	ErrExists = errors.New("registry: a region with that name exists")
	// ErrFull: every number 0–7 has been given once; numbers are never reused.
	ErrFull = errors.New("registry: every region number (0-7) has been given")
	// ErrRetired: the region was already retired.
	ErrRetired = errors.New("registry: region already retired")
	// ErrNotSeeded: the store was never seeded (Add, Schedule and NextNumber need Seed first).
	ErrNotSeeded = errors.New("registry: the registry was never seeded")
	// ErrUnavailable: the store could not serve the call now: unreachable, throttled, busy, out
	// of time, or closed. A write may or may not have taken effect; retrying may work.
	ErrUnavailable = errors.New("registry: store unavailable")
)

// AuditEntry is one change: who, what, when.
type AuditEntry struct {
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	Detail string    `json:"detail"`
}

// Store is the driver contract. Every method must be safe for concurrent use by many goroutines
// and processes.
type Store interface {
	// Seed must, only on a store never seeded before, write the given regions and set the next
	// number above theirs, and write the schedule name. Seeding twice changes nothing.
	//
	// Every method fails with ErrUnavailable (wrapping the native error) when the store cannot
	// serve the call now, and with the errors named below for the outcomes they name.
	Seed(ctx context.Context, regions []region.Region, schedule string) error
	// List returns every region, retired ones included, ordered by number.
	List(ctx context.Context) ([]region.Region, error)
	// Get returns one region or ErrNotFound.
	Get(ctx context.Context, name string) (region.Region, error)
	// Add must give the region the next number never given before (ErrFull past 7), refusing a
	// name in use (ErrExists, retired regions included), or ErrNotSeeded. Two concurrent adds
	// never get one number.
	Add(ctx context.Context, name, peer string, at time.Time) (region.Region, error)
	// Retire must mark an active region retired at the given time (ErrNotFound, ErrRetired).
	Retire(ctx context.Context, name string, at time.Time) (region.Region, error)
	// Schedule returns the layout schedule's name, or ErrNotSeeded.
	Schedule(ctx context.Context) (string, error)
	// NextNumber returns the next number Add would give (8 when none is left), or ErrNotSeeded.
	NextNumber(ctx context.Context) (int, error)
	// Audit appends an entry; AuditLog returns them oldest first.
	Audit(ctx context.Context, e AuditEntry) error
	AuditLog(ctx context.Context) ([]AuditEntry, error)
	// Close releases the driver's resources.
	Close() error
}
