// Package mapping is the contract of the public-ID mapping store: public → internal and
// internal → public, created once and never overwritten. Drivers: redismap (Redis, standalone or
// Cluster) and sqlitemap (the embedded default); mappingtest is the conformance suite.
package mapping

import (
	"context"
	"errors"
)

// Errors.
var (
	// ErrNotFound: no mapping for that public ID.
	ErrNotFound = errors.New("mapping: not found")
	// ErrUnavailable: the store cannot be reached; nothing was acknowledged.
	ErrUnavailable = errors.New("mapping: store unavailable")
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
	Close() error
}
