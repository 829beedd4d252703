// Package mapstore opens the mapping store the way both public-ID programs do (the internal API,
// cmd/public-id, and the customer gateway, cmd/public-id-gateway): the same flags, the same
// drivers, the same durability watch and the same cache of resolved mappings in front. Each
// process opens the store with credentials of its own; the rules of a mapping (never
// overwritten, first writer wins, refused while the store is volatile) are the drivers', so
// both programs apply them alike.
package mapstore

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/idgen/idgen/libs/svc/healthz"
	"github.com/idgen/idgen/libs/svc/storespec"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/cached"
	"github.com/idgen/idgen/services/public-id/mapping/deadline"
	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/idgen/idgen/services/public-id/mapping/regions"
	"github.com/idgen/idgen/services/public-id/mapping/sqlitemap"
	"github.com/prometheus/client_golang/prometheus"
)

// ReasonVolatile names a mapping store that can lose acknowledged mappings: the reason of a
// refused publish (503) and of /healthz's degraded answer.
const ReasonVolatile = "store_volatile"

// ReasonFilling names a region whose store of record is being filled from the other regions
// (--store regions:FILE, a region that came back empty): the reason of a refused publish and of
// /healthz's 503 until it is filled.
const ReasonFilling = "region_filling"

// Flags are the store's settings, the same flags in both programs. Defaults are in Register.
type Flags struct {
	Store               string // sqlite:PATH, redis:HOST:PORT, redis://…, rediss://…, redis-cluster:…, dynamodb:URL
	DynamoDBTable       string // the table of a dynamodb: store
	RedisCA             string
	RedisReplicas       int
	AcceptVolatileStore bool
	RedisCheckEvery     time.Duration // how often the Redis store re-reads its nodes' persistence
	MappingCacheBytes   uint64        // the in-process cache of resolved mappings; 0 for none
	StoreTimeout        time.Duration // the bound of every store call
	Cache               CacheFlags    // the regional Redis cache (--cache-redis…)
}

// Register defines the store's flags on fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Store, "store", "sqlite:.idgen/public-ids.db", "sqlite:PATH; redis:HOST:PORT or a redis:// or rediss:// (TLS) URL; redis-cluster:HOST:PORT,… or redis-cluster:URL; dynamodb:ENDPOINT_URL (region and credentials from the standard AWS chain); regions:FILE, the DynamoDB stores of every region (docs/public-ids.md, \"Every region\")")
	fs.StringVar(&f.DynamoDBTable, "dynamodb-table", dynamomap.DefaultTable, "the DynamoDB table of a dynamodb: store")
	fs.StringVar(&f.RedisCA, "redis-ca", "", "PEM file of the CA that issued the Redis servers' certificates (rediss://); default: system roots")
	fs.IntVar(&f.RedisReplicas, "redis-replicas", 0, "replicas each publish waits for with WAITAOF (Redis 7.2+)")
	fs.BoolVar(&f.AcceptVolatileStore, "accept-volatile-store", false, "run on a Redis that can lose acknowledged mappings (AOF off, or an fsync policy that cannot be confirmed), at start-up and when it turns so while the service runs, instead of refusing to start and then refusing publishes (store_volatile); logged and exported as idgen_publicid_store_volatile")
	fs.DurationVar(&f.RedisCheckEvery, "redis-durability-check", 10*time.Second, "how often the Redis store re-reads the persistence of every node that takes writes (INFO persistence, CONFIG GET appendfsync), as at start-up; a store found volatile refuses publishes (store_volatile) unless --accept-volatile-store")
	fs.DurationVar(&f.StoreTimeout, "store-timeout", time.Second, "the bound of every call to the mapping store (a publish, a lookup, a resolve, a token): a frozen, slow or unreachable store answers 503 store_unavailable within it")
	fs.Uint64Var(&f.MappingCacheBytes, "mapping-cache-bytes", 32<<20, "bytes of the in-process cache of resolved mappings (each entry: its strings plus 128 bytes); only mappings the store answered durably are kept, never misses; 0 for none")
	f.Cache.register(fs)
}

// Check validates the settings.
func (f Flags) Check() error {
	if _, err := f.Spec(); err != nil {
		return err
	}
	if f.DynamoDBTable == "" {
		return fmt.Errorf("--dynamodb-table: want a table name")
	}
	if f.RedisReplicas < 0 {
		return fmt.Errorf("--redis-replicas %d: want 0 or more", f.RedisReplicas)
	}
	if f.RedisCheckEvery <= 0 {
		return fmt.Errorf("--redis-durability-check %v: want a positive duration", f.RedisCheckEvery)
	}
	if f.StoreTimeout <= 0 {
		return fmt.Errorf("--store-timeout %v: want a positive duration", f.StoreTimeout)
	}
	if err := f.Cache.check(); err != nil {
		return err
	}
	return nil
}

// Spec returns --store parsed: SQLite, Redis, Redis Cluster or DynamoDB.
func (f Flags) Spec() (storespec.Spec, error) {
	return storespec.Parse("--store", f.Store, storespec.SQLite, storespec.Redis, storespec.RedisCluster, storespec.DynamoDB, storespec.Regions)
}

// Opened is an open mapping store.
type Opened struct {
	// Store is the store --store names; Mappings is the same with every call bounded by
	// --store-timeout, behind the region's Redis cache (--cache-redis, when set) and the
	// in-process cache of resolved mappings (--mapping-cache-bytes, when not 0).
	// Callers use Mappings.
	Store, Mappings mapping.Store
	// Regions is the cross-region store when --store is regions:FILE (Store is then the same
	// value), else nil.
	Regions    *regions.Store
	durability mapping.Durability // Store's, when it says; nil counts as volatile
	accept     bool
}

// Open opens the store f names (making a SQLite file's directory when missing), exports
// idgen_publicid_store_volatile and the cache's metrics on reg, and puts the cache in front. Its
// errors never repeat a URL (it may hold a password).
func Open(ctx context.Context, f Flags, log *slog.Logger, reg prometheus.Registerer) (*Opened, error) {
	spec, err := f.Spec()
	if err != nil {
		return nil, err
	}
	openRedis := func(ctx context.Context, spec storespec.Spec) (mapping.Store, error) {
		return redismap.Open(ctx, redismap.Target{Addr: spec.Where, Cluster: spec.Kind == storespec.RedisCluster, CAFile: f.RedisCA},
			redismap.Options{WaitReplicas: f.RedisReplicas, AcceptVolatile: f.AcceptVolatileStore, CheckEvery: f.RedisCheckEvery, Logger: log})
	}
	st, err := storespec.Open(ctx, spec, storespec.Drivers[mapping.Store]{
		storespec.SQLite: func(ctx context.Context, spec storespec.Spec) (mapping.Store, error) {
			return sqlitemap.Open(ctx, spec.Where)
		},
		storespec.Redis:        openRedis,
		storespec.RedisCluster: openRedis,
		storespec.Regions: func(ctx context.Context, spec storespec.Spec) (mapping.Store, error) {
			file, err := regions.ReadFile(spec.Where)
			if err != nil {
				return nil, err
			}
			return regions.Open(ctx, file, regions.Options{CallTimeout: f.StoreTimeout, Registerer: reg, Logger: log})
		},
		storespec.DynamoDB: func(ctx context.Context, spec storespec.Spec) (mapping.Store, error) {
			return dynamomap.Open(ctx, dynamomap.Target{Endpoint: spec.Where, Table: f.DynamoDBTable}, dynamomap.Options{})
		},
	})
	if err != nil {
		return nil, err
	}
	o := &Opened{Store: st, accept: f.AcceptVolatileStore}
	o.durability, _ = st.(mapping.Durability)
	o.Regions, _ = st.(*regions.Store)
	// Every call bounded, the cache's misses included; the cache's hits need no store. The
	// cross-region store bounds each call to a region's store itself (--store-timeout), and a
	// call of it may ask several in turn.
	o.Mappings = st
	if o.Regions == nil {
		if o.Mappings, err = deadline.New(st, f.StoreTimeout); err != nil {
			st.Close()
			return nil, err
		}
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "idgen_publicid_store_volatile",
		Help: "1 while the mapping store's last reading of its persistence (at start-up, then every --redis-durability-check) " +
			"found it can lose acknowledged mappings (AOF off, or an fsync policy that loses or cannot confirm writes): publishes " +
			"are refused (store_volatile) unless --accept-volatile-store. Else 0."},
		func() float64 {
			if v, _ := o.Volatile(); v {
				return 1
			}
			return 0
		}))
	if v, why := o.Volatile(); v {
		log.Error("the mapping store is volatile: acknowledged mappings can be lost, and links customers hold would stop resolving; accepted by --accept-volatile-store",
			"reason", why)
	}
	if o.Mappings, err = f.Cache.wrap(ctx, o.Mappings, o.durability, log, reg); err != nil {
		st.Close()
		return nil, err
	}
	if f.MappingCacheBytes > 0 {
		c, err := cached.New(o.Mappings, cached.Options{MaxBytes: f.MappingCacheBytes, Registerer: reg, Durable: o.readsDurable})
		if err != nil {
			st.Close()
			return nil, err
		}
		o.Mappings = c
	}
	return o, nil
}

// Volatile reports whether the store can lose an acknowledged mapping now, and why; a store that
// does not say counts as volatile.
func (o *Opened) Volatile() (bool, string) {
	if o.durability == nil {
		return true, "the store does not report its durability"
	}
	return o.durability.Volatile()
}

func (o *Opened) readsDurable() bool { return o.durability != nil && o.durability.ReadsDurable() }

// Health is /healthz's answer about the store: nil when it is durable, else a degraded body
// (served with 200: resolves still work, so the instance stays in rotation) that says whether
// publishes are refused.
func (o *Opened) Health() *healthz.Service {
	v, why := o.Volatile()
	if !v {
		return nil
	}
	what := "publishes are refused until the store is durable again; resolves work: "
	if o.accept {
		what = "publishes go on (--accept-volatile-store), and a mapping acknowledged now can be lost: "
	}
	h := healthz.Degraded(ReasonVolatile, "the mapping store is volatile: "+what+why)
	return &h
}

// Probe is what a health check asks of the store: for the cross-region store, mapping.ErrFilling
// while the local region is being filled, else its local store's answer; for any other, a
// lookup's. Nil when the store answers.
func (o *Opened) Probe(ctx context.Context) error {
	if o.Regions != nil {
		return o.Regions.Probe(ctx)
	}
	_, err := o.Mappings.Lookup(ctx, 0)
	if errors.Is(err, mapping.ErrNotFound) {
		return nil
	}
	return err
}

// Ready is nil when the process may take traffic, else /healthz's 503 body: a region whose
// store is being filled takes none.
func (o *Opened) Ready(ctx context.Context) *healthz.Service {
	if o.Regions != nil && !o.Regions.Filled(ctx) {
		h := healthz.Unavailable(ReasonFilling, "this region's mapping store is being filled from the other regions (idgen_publicid_region_filled)")
		return &h
	}
	return nil
}

// Fill fills the local region's store from the other regions' when --store is regions:FILE and
// it is not filled (a region that came back empty), trying again every retry until it is, then
// watches it until ctx ends: a table made again, empty, while the process runs (its fill note
// gone) is filled again. For any other store it returns at once.
func (o *Opened) Fill(ctx context.Context, retry time.Duration) error {
	if o.Regions == nil {
		return nil
	}
	for {
		if _, err := o.Regions.Fill(ctx, retry); err != nil {
			return err
		}
		for o.Regions.Filled(ctx) {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(retry):
			}
		}
	}
}

// Close closes the store (through the cache, which closes what it wraps).
func (o *Opened) Close() error { return o.Mappings.Close() }
