// Package embedded gives a process a ready ID generator: an idcore.Generator with a lease keeper
// per layout period it needs and a clock watch, wired the one way both the generator service and
// embedding applications use. There is no other path to a generator that holds a number.
//
// An application generates IDs itself, with no network call per ID, leasing from the embedded
// range (v2: 64–511) with the same rules, clock checks, fence and metrics as the service:
//
//	store, _ := sqlitelease.Open(ctx, "/var/lib/app/leases.db", lease.TableV2)
//	node, err := embedded.Start(ctx, embedded.Config{Region: 0, Stores: map[string]lease.Store{"v2": store}})
//	defer node.Close(context.Background())
//	if err := node.WaitReady(ctx); err != nil { … }
//	id, err := node.Next(ctx)
package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Node. Zero values take the defaults in the comments.
type Config struct {
	// Region is the region number written into layouts with a region field.
	Region int
	// Schedule is the layout schedule. Default: idcore.ScheduleV2.
	Schedule idcore.Schedule
	// Stores holds the lease table for each layout of the schedule whose period has not ended
	// ("v2": the region's idgen-leases-v2; "v1": the global idgen-leases). Required.
	Stores map[string]lease.Store
	// Range is "service" (0–63), "embedded" (64 up) or "A-B". Default: "embedded".
	Range string
	// Lease, Renew and FenceMargin: defaults 5 min, 10 s, 5 s (see lease.Config). They must keep
	// the rules of each table's metadata row: Start refuses settings that differ, naming both.
	Lease, Renew, FenceMargin time.Duration
	// ClockCheck is idcore.ClockStrict (default) or idcore.ClockWarn (development only).
	ClockCheck idcore.ClockCheck
	// Clock and Health: defaults idcore.SystemClock and idcore.KernelHealth.
	Clock  idcore.Clock
	Health idcore.HealthSource
	// ClockEvery is how often the clock's health is checked. Default: 1 s.
	ClockEvery time.Duration
	// Holder names this process in the lease tables. Default: lease.HolderName.
	Holder string
	// Logger: default discard.
	Logger *slog.Logger
	// Registerer, when set, receives the generator's and keepers' metrics.
	Registerer prometheus.Registerer
}

// Node is a running generator with its keepers.
type Node struct {
	gen     *idcore.Generator
	keepers []*lease.Keeper
	log     *slog.Logger
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// Start validates cfg, builds the generator and keepers, and starts claiming in the background.
// It returns before a number is held: WaitReady waits for one.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Range == "" {
		cfg.Range = "embedded"
	}
	if cfg.ClockEvery == 0 {
		cfg.ClockEvery = time.Second
	}
	gen, err := idcore.NewGenerator(idcore.Settings{
		Schedule: cfg.Schedule, Region: cfg.Region, Clock: cfg.Clock, Health: cfg.Health,
		ClockCheck: cfg.ClockCheck, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	clock := cfg.Clock
	if clock == nil {
		clock = idcore.SystemClock()
	}
	n := &Node{gen: gen, log: cfg.Logger}
	nowTs := clock.Now().UnixMilli() - idcore.EpochUnixMs
	periods := gen.Schedule().Periods()
	for i, p := range periods {
		if i+1 < len(periods) && periods[i+1].Start <= nowTs {
			continue // a period that has ended needs no number
		}
		name := p.Layout.Name()
		store := cfg.Stores[name]
		if store == nil {
			return nil, fmt.Errorf("embedded: schedule %s needs a lease store for layout %s", gen.Schedule().Name(), name)
		}
		r, err := lease.ParseRange(cfg.Range, p.Layout.MaxMachine())
		if err != nil {
			return nil, err
		}
		k, err := lease.NewKeeper(lease.Config{
			Store: store, Generator: gen, Layout: name, Range: r, Holder: cfg.Holder,
			Lease: cfg.Lease, Renew: cfg.Renew, FenceMargin: cfg.FenceMargin, Clock: cfg.Clock, Logger: cfg.Logger,
		})
		if err != nil {
			return nil, err
		}
		// A holder whose lease settings differ from the rules of the table refuses to start.
		if err := k.CheckRules(ctx); err != nil {
			return nil, fmt.Errorf("embedded: refusing to start: %w", err)
		}
		n.keepers = append(n.keepers, k)
	}
	if cfg.Registerer != nil {
		cs := []prometheus.Collector{gen.Collector()}
		for _, k := range n.keepers {
			cs = append(cs, k.Collectors()...)
		}
		for _, c := range cs {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("embedded: register metrics: %w", err)
			}
		}
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.cancel = cancel
	for _, k := range n.keepers {
		n.wg.Go(func() { k.Run(runCtx) })
	}
	n.wg.Go(func() { gen.WatchClock(runCtx, cfg.ClockEvery) })
	return n, nil
}

// Generator returns the node's generator (for health and metrics; IDs come from Next).
func (n *Node) Generator() *idcore.Generator { return n.gen }

// Next returns a new ID.
func (n *Node) Next(ctx context.Context) (idcore.ID, error) { return n.gen.Next(ctx) }

// NextBatch returns count new IDs, strictly increasing.
func (n *Node) NextBatch(ctx context.Context, count int) ([]idcore.ID, error) {
	return n.gen.NextBatch(ctx, count)
}

// AppendBatch appends count new IDs to dst.
func (n *Node) AppendBatch(ctx context.Context, dst []idcore.ID, count int) ([]idcore.ID, error) {
	return n.gen.AppendBatch(ctx, dst, count)
}

// Ready returns nil when the node can issue an ID now, else the refusal it would give.
func (n *Node) Ready() error { return n.gen.Ready() }

// Leases returns each keeper's status.
func (n *Node) Leases() []lease.Status {
	out := make([]lease.Status, len(n.keepers))
	for i, k := range n.keepers {
		out[i] = k.Status()
	}
	return out
}

// WaitReady waits until the node can issue IDs (a number held, a healthy clock) or ctx ends,
// returning the last reason it could not.
func (n *Node) WaitReady(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		err := n.Ready()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("embedded: not ready: %w", err)
		case <-t.C:
		}
	}
}

// Close stops issuing, then releases every number (so each is claimable at once and the next
// holder's floor lies above every ID this node made). Safe to call more than once.
func (n *Node) Close(ctx context.Context) error {
	n.closeOnce.Do(func() {
		n.cancel()
		n.wg.Wait()
		last := n.gen.Stop()
		var errs []error
		for _, k := range n.keepers {
			if err := k.Release(ctx, last); err != nil {
				errs = append(errs, err)
			}
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}
