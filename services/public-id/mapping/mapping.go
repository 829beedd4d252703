// Package mapping is the contract of the public-ID mapping store: public → internal and
// internal → public, created once and never overwritten; the gateway's tokens, values kept
// under handles until they expire; and named secrets, created once and shared by every process
// of the store. Drivers: dynamomap (DynamoDB, one table per region, the store of record; a
// Replica), redismap (Redis, standalone or Cluster) and sqlitemap (the embedded default);
// mappingtest is the conformance suite (Run, and RunReplica for a Replica).
package mapping

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Portable errors. Drivers map their native errors to these, wrapping the native error (so
// errors.As still reaches it); the service maps them to API codes with errors.Is, e.g.
// errors.Is(err, mapping.ErrUnavailable) → 503 Unavailable (ErrVolatile too, under its own
// reason). Any other error (newPublic's, a corrupt value) is the driver's or the caller's, not
// the store's availability.
var (
	// ErrNotFound: no mapping for that public ID (or internal ID, for Lookup).
	ErrNotFound = errors.New("mapping: not found")
	// ErrUnavailable: the store could not serve the call now (unreachable, busy, failing over,
	// out of time, or closed); nothing was acknowledged, and retrying may work.
	ErrUnavailable = errors.New("mapping: store unavailable")
	// ErrVolatile: the store cannot keep a new mapping durably now (a Redis whose AOF was turned
	// off while the service ran, say), so the driver refuses to write one. Nothing was written;
	// reads still answer, and a publish works again once the store is durable.
	ErrVolatile = errors.New("mapping: store volatile")
	// ErrTokenTaken: PutToken's handle holds a token already (one not yet expired); nothing was
	// written.
	ErrTokenTaken = errors.New("mapping: token handle taken")
)

// Store maps internal IDs to public IDs and back.
type Store interface {
	// Publish must return the public ID of internal: the one it already has, or else a new one
	// from newPublic, stored in both directions. It never overwrites a mapping, and concurrent
	// calls for one internal ID (from any number of processes) all return the same public ID.
	// When it returns without error the mapping is durable (the driver's documented setting).
	Publish(ctx context.Context, internal int64, newPublic func() (string, error)) (string, error)
	// Lookup returns the public ID internal already has, or ErrNotFound; it makes none. Publish
	// may make a candidate public ID (sqids) before it knows whether one exists, so a caller that
	// expects existing mappings (the gateway's responses) looks up first.
	Lookup(ctx context.Context, internal int64) (string, error)
	// Resolve returns the internal ID of a public ID, looked up by the exact string, or ErrNotFound.
	Resolve(ctx context.Context, public string) (int64, error)
	// PutToken keeps value under handle until ttl has passed (ttl is rounded up to a whole
	// millisecond and must be positive), for GetToken. It never overwrites: a handle that holds
	// a token not yet expired fails with ErrTokenTaken. Tokens live apart from the mappings (a
	// handle spelled like a public ID touches no mapping). A token is not a mapping: a lost one
	// costs its customer a restart of what it continued, so a driver may keep tokens less
	// durably than mappings (its documented setting), and a store that refuses new mappings as
	// volatile still keeps tokens.
	PutToken(ctx context.Context, handle string, value []byte, ttl time.Duration) error
	// GetToken returns the value PutToken kept under handle, byte for byte, or ErrNotFound when
	// there is none or its ttl has passed.
	GetToken(ctx context.Context, handle string) ([]byte, error)
	// Secret returns the secret stored under name, or, when there is none, stores size random
	// bytes from crypto/rand under it and returns them. It never overwrites: concurrent calls
	// (from any number of processes) all return the one value stored first, so every process
	// of the store shares it (the gateways' key of their token handles). A stored secret of
	// another size is an error; size must be positive. Secrets live apart from mappings and
	// tokens, never expire, and may be kept as durably as tokens are (a lost secret is made anew
	// by the next call).
	Secret(ctx context.Context, name string, size int) ([]byte, error)
	Close() error
}

// Durability is what a store says of its own persistence; the service reads it through this
// interface, so a decorator or a new driver that does not implement it counts as not durable
// (ReadsDurable false: nothing is cached) rather than as durable by default.
type Durability interface {
	// Volatile reports whether the store can lose an acknowledged mapping now, and why.
	Volatile() (bool, string)
	// ReadsDurable reports whether whatever the store answers now is durable, so that an answer
	// may be kept by a cache.
	ReadsDurable() bool
}

// Replica is one region's store of record as the cross-region store (mapping/regions) uses it:
// a Store, plus what copying mappings between regions needs. The DynamoDB driver (dynamomap)
// implements it; its conformance suite is mappingtest.RunReplica.
type Replica interface {
	Store
	// Copy stores a mapping made elsewhere, as it is: public → internal unless public has a
	// mapping already, and internal → public unless internal has one (the first public ID of an
	// internal ID is never overwritten, here as in Publish). It returns the public ID internal
	// has in this store after the call: public, or the other one it had (both then resolve,
	// each to internal). A public ID already mapped to another internal ID is an error
	// wrapping ErrConflict, and nothing is written. Copying the same mapping again is a no-op.
	Copy(ctx context.Context, internal int64, public string) (string, error)
	// Scan returns the store's mappings page by page, in the store's own order: at most limit
	// pairs after cursor ("" for the first page), and the cursor of the next page ("" after the
	// last). Every mapping is one Pair, read from its public → internal direction (a mapping
	// whose internal ID holds another public ID is still listed under each public ID). A cursor
	// stays valid while the store runs, so a copy that stops can go on where it stopped.
	Scan(ctx context.Context, cursor string, limit int) (pairs []Pair, next string, err error)
	// Note and SetNote read and write named notes of the store (the cross-region fill's progress): Note
	// returns the value under name, or ErrNotFound; SetNote stores it, overwriting. Notes live
	// apart from mappings, tokens and secrets, and are as durable as mappings.
	Note(ctx context.Context, name string) ([]byte, error)
	SetNote(ctx context.Context, name string, value []byte) error
}

// Pair is one mapping.
type Pair struct {
	Public   string
	Internal int64
}

// ErrFilling: this region's store of record is being filled from the other regions' (it came
// back empty), so it acknowledges no publish and takes no customers until then. It wraps
// ErrUnavailable.
var ErrFilling = fmt.Errorf("%w: this region's store is being filled from the other regions", ErrUnavailable)

// ErrConflict: a public ID already maps to another internal ID (a Copy's public ID, which
// random 128-bit public IDs never are unless a store was written by hand).
var ErrConflict = errors.New("mapping: public id maps to another internal id")
