// Package storespec reads the one-string store settings of idgen's services and tools
// (--lease-store, --store): a kind, a colon, and where the store is.
//
//	sqlite:PATH                       a SQLite file (its directory is made by MakeDir)
//	dynamodb:ENDPOINT_URL             DynamoDB at an endpoint (AWS region and credentials from the standard chain)
//	redis:HOST:PORT                   Redis
//	redis://…, rediss://…             Redis by URL (rediss: TLS); the URL may hold a password
//	redis-cluster:HOST:PORT,…         Redis Cluster by seed addresses
//	redis-cluster:URL                 Redis Cluster by URL
//	regions:PATH                      the public-ID stores of every region, by a regions file
//
// Parsing has no side effects; opening the store is the driver's business, which Open calls for
// a service with the drivers it has. Error messages
// never repeat more of a spec than its kind: a URL may hold a password.
package storespec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Kind is a kind of store.
type Kind string

// The kinds of store.
const (
	SQLite       Kind = "sqlite"
	DynamoDB     Kind = "dynamodb"
	Redis        Kind = "redis"
	RedisCluster Kind = "redis-cluster"
	Regions      Kind = "regions"
)

// form is how a kind is written, for messages.
func (k Kind) form() string {
	switch k {
	case SQLite:
		return "sqlite:PATH"
	case DynamoDB:
		return "dynamodb:ENDPOINT_URL"
	case Redis:
		return "redis:HOST:PORT, redis://… or rediss://…"
	case RedisCluster:
		return "redis-cluster:HOST:PORT,… or redis-cluster:URL"
	case Regions:
		return "regions:FILE"
	}
	return string(k) + ":…"
}

// Spec is a parsed store setting.
type Spec struct {
	Kind Kind
	// Where is the rest: the SQLite file's path, the DynamoDB endpoint URL, the Redis address,
	// the regions file's path, or, for redis:// and rediss://, the whole URL.
	Where string
}

// Parse reads spec, which must be of one of kinds (all kinds when none is given). flag names the
// setting in the error ("--store").
func Parse(flag, spec string, kinds ...Kind) (Spec, error) {
	if len(kinds) == 0 {
		kinds = []Kind{SQLite, DynamoDB, Redis, RedisCluster}
	}
	kind, where, ok := strings.Cut(spec, ":")
	s := Spec{Kind: Kind(kind), Where: where}
	if kind == "redis" || kind == "rediss" {
		if strings.HasPrefix(where, "//") {
			s = Spec{Kind: Redis, Where: spec}
		} else if kind == "rediss" {
			ok = false // rediss only as a URL
		}
	}
	if ok && where != "" {
		for _, k := range kinds {
			if s.Kind == k {
				return s, nil
			}
		}
	}
	want := ""
	for i, k := range kinds {
		switch {
		case i == 0:
		case i == len(kinds)-1:
			want += " or "
		default:
			want += ", "
		}
		want += k.form()
	}
	shown := kind
	if !ok || where != "" {
		shown += ":…" // the rest is not repeated
	} else {
		shown += ":"
	}
	return Spec{}, fmt.Errorf("%s %q: want %s", flag, shown, want)
}

// MakeDir makes the directory a SQLite file lives in, when missing; other kinds need none.
func (s Spec) MakeDir() error {
	if s.Kind != SQLite {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(s.Where), 0o755); err != nil {
		return fmt.Errorf("storespec: the SQLite file's directory: %w", err)
	}
	return nil
}

// Drivers are the ways a service opens its stores: for each kind it takes, the driver's open
// function, given the spec (Where, and Kind for a driver that serves two kinds).
type Drivers[S any] map[Kind]func(ctx context.Context, s Spec) (S, error)

// Open opens the store s names with its kind's driver, making a SQLite file's directory first
// (MakeDir). A kind with no driver is an error; on any error the store is S's zero value (never
// a typed nil in an interface).
func Open[S any](ctx context.Context, s Spec, drivers Drivers[S]) (S, error) {
	var none S
	open, ok := drivers[s.Kind]
	if !ok {
		return none, fmt.Errorf("storespec: no driver for a %s store", s.Kind)
	}
	if err := s.MakeDir(); err != nil {
		return none, err
	}
	st, err := open(ctx, s)
	if err != nil {
		return none, err
	}
	return st, nil
}
