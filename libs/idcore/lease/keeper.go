package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Keeper. Zero durations take the defaults in the comments.
type Config struct {
	// Store is the lease table. Required.
	Store Store
	// Generator receives the machine number, floor and fence. Required.
	Generator *idcore.Generator
	// Layout is the layout whose period this table's numbers serve. Default: "v2".
	Layout string
	// Range is where the keeper claims. Required (see ParseRange).
	Range Range
	// Holder names this process. Default: HolderName(process start).
	Holder string
	// Lease, Renew and FenceMargin must keep the rules of the table's metadata row (Rules.Admits;
	// the first holder of a new table writes them from its own): a keeper whose settings differ
	// claims nothing (ErrRules), and CheckRules lets its owner refuse to start.
	// Lease is the lease length. Default: 5 min.
	Lease time.Duration
	// Renew is the renewal interval; at most a third of Lease. Default: 10 s.
	Renew time.Duration
	// FenceMargin: no ID is issued at or after lease_expiry − FenceMargin. Default: 5 s.
	FenceMargin time.Duration
	// Clock gives the wall time written into leases; the waits between claims and renewals
	// sleep on its monotonic clock. Default: idcore.SystemClock.
	Clock idcore.Clock
	// Logger receives claims, losses, releases (Info/Warn) and renewals (Debug). Default: discard.
	Logger *slog.Logger
}

// Status is what a keeper holds now.
type Status struct {
	Layout       string
	Held         bool
	Machine      int
	Epoch        int64
	ExpiryUnixMs int64 // the lease_expiry this holder last wrote
	FenceUnixMs  int64
	TableID      string
	Holder       string
	// Problem is the last reason it could not claim or renew, if any ("" when all is well).
	Problem string
}

// Keeper holds one machine number from one lease table for a generator.
type Keeper struct {
	cfg Config
	log *slog.Logger

	mu    sync.Mutex
	st    Status
	floor int64
	due   time.Time // the next renewal: a renew interval after the clock reading of the last expiry written

	claims   *prometheus.CounterVec
	renewals *prometheus.CounterVec
}

// NewKeeper validates cfg and returns a keeper; Run starts it.
func NewKeeper(cfg Config) (*Keeper, error) {
	if cfg.Layout == "" {
		cfg.Layout = "v2"
	}
	if cfg.Holder == "" {
		cfg.Holder = HolderName(processStart)
	}
	if cfg.Lease == 0 {
		cfg.Lease = 5 * time.Minute
	}
	if cfg.Renew == 0 {
		cfg.Renew = 10 * time.Second
	}
	if cfg.FenceMargin == 0 {
		cfg.FenceMargin = 5 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = idcore.SystemClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case cfg.Store == nil || cfg.Generator == nil:
		return nil, errors.New("lease: a keeper needs a store and a generator")
	case cfg.Range.Size() < 1 || cfg.Range.Lo < 0:
		return nil, fmt.Errorf("lease: empty range %s", cfg.Range)
	case cfg.Renew <= 0 || cfg.Renew*3 > cfg.Lease:
		return nil, fmt.Errorf("lease: renew interval %v must be positive and at most a third of the lease %v", cfg.Renew, cfg.Lease)
	case cfg.FenceMargin <= 0 || cfg.FenceMargin >= cfg.Lease-cfg.Renew:
		return nil, fmt.Errorf("lease: fence margin %v must be positive and below lease − renew (%v)", cfg.FenceMargin, cfg.Lease-cfg.Renew)
	case cfg.Holder == QuarantineHolder || cfg.Holder == LiftedHolder || cfg.Holder == FencedHolder:
		return nil, fmt.Errorf("lease: holder name %q is reserved", cfg.Holder)
	}
	lay, ok := cfg.Generator.Schedule().Layout(cfg.Layout)
	if !ok {
		return nil, fmt.Errorf("lease: layout %s is not in the generator's schedule", cfg.Layout)
	}
	if cfg.Range.Hi > lay.MaxMachine() {
		return nil, fmt.Errorf("lease: range %s exceeds layout %s's machines (0-%d)", cfg.Range, cfg.Layout, lay.MaxMachine())
	}
	if err := cfg.Generator.ExpectLease(cfg.Layout); err != nil {
		return nil, err
	}
	labels := prometheus.Labels{"layout": cfg.Layout}
	k := &Keeper{
		cfg: cfg,
		log: cfg.Logger.With("layout", cfg.Layout, "holder", cfg.Holder),
		st:  Status{Layout: cfg.Layout, Holder: cfg.Holder},
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idgen_lease_claims_total", Help: "Claim rounds, by result (ok, none_free, restored, error).", ConstLabels: labels,
		}, []string{"result"}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idgen_lease_renewals_total", Help: "Lease renewals, by result (ok, lost, lapsed, table_changed, error).", ConstLabels: labels,
		}, []string{"result"}),
	}
	// Every result exists at zero from the first scrape: alerts and dashboards see a rate of 0,
	// not an absent series.
	for _, r := range []string{"ok", "none_free", "restored", "error"} {
		k.claims.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "lost", "lapsed", "table_changed", "error"} {
		k.renewals.WithLabelValues(r)
	}
	return k, nil
}

var processStart = time.Now()

// Collectors returns the keeper's metrics, for the owner to register.
func (k *Keeper) Collectors() []prometheus.Collector {
	return []prometheus.Collector{k.claims, k.renewals}
}

// Status returns what the keeper holds now.
func (k *Keeper) Status() Status {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.st
}

// Run claims and renews until ctx ends. It never releases: the owner stops the generator and
// then calls Release, so no ID is issued after the release.
//
// While it holds a number it renews once per renew interval, counted from the time the expiry it
// last wrote was computed from (so a renewal answered late, after an outage, is followed by the
// next one at once rather than a full interval later). When a renewal fails it retries on a short
// cadence: attempts start from a twentieth of the renew interval apart, doubling up to
// RetryCadence (the renew interval when that is shorter), and each waits at most AttemptTimeout
// for the store, so a store that answers again is renewed on within that cadence. It never
// sleeps or waits for the store past its fence: at the fence it drops the number (the generator
// refuses from that instant) and claims again at once.
func (k *Keeper) Run(ctx context.Context) {
	backoff := time.Duration(0)
	for {
		var wait time.Duration
		if !k.Status().Held {
			if err := k.claim(ctx); err != nil {
				// Retry at least every renew interval, with jitter, so a freed number is taken
				// within seconds.
				wait = jitter(k.cfg.Renew/2, k.cfg.Renew)
			} else {
				backoff, wait = 0, k.untilDue()
			}
		} else {
			start := k.cfg.Clock.Monotonic()
			switch err := k.renew(ctx); {
			case err == nil:
				backoff, wait = 0, k.untilDue()
			case errors.Is(err, errDropped):
				wait = 0 // lost, lapsed or restored: claim again at once
			default:
				// The store is unreachable or slow: keep issuing up to the fence (the generator
				// enforces it) and retry soon, so that the first renewal after the store answers
				// again comes within the retry cadence, whatever the length of the outage.
				// Attempts start at most the backoff apart: one that waited for the store (up to
				// AttemptTimeout) is followed by the next at once, so a store that holds requests
				// while it is down has one waiting for it whenever it answers again.
				backoff = min(max(2*backoff, k.cfg.Renew/20), k.retryCadence())
				wait = max(0, jitter(backoff/2, backoff)-(k.cfg.Clock.Monotonic()-start))
			}
		}
		if st := k.Status(); st.Held {
			// Wake at the fence at the latest: the number is dropped there, not at the next round.
			wait = min(wait, max(0, k.untilFence(st)))
		}
		if wait > 0 {
			if err := k.cfg.Clock.Sleep(ctx, wait); err != nil {
				return
			}
		} else if ctx.Err() != nil {
			return
		}
	}
}

// RetryCadence is the longest time between the starts of two renewal attempts while the store
// does not answer (the renew interval, when that is shorter); AttemptTimeout is the longest a
// renewal attempt waits for the store's answers before the next starts. A store that answers
// again is renewed on within RetryCadence plus its own latency, or within AttemptTimeout when the
// attempt then waiting was sent on a connection that never delivers (docs/leases.md#store-outages).
const (
	RetryCadence   = time.Second
	AttemptTimeout = 2 * time.Second
)

func (k *Keeper) retryCadence() time.Duration { return min(k.cfg.Renew, RetryCadence) }

// untilDue is the wait until the next renewal: one renew interval after the time the expiry last
// written was computed from, never more than the interval (a clock stepped back) nor less than 0.
func (k *Keeper) untilDue() time.Duration {
	k.mu.Lock()
	due := k.due
	k.mu.Unlock()
	return min(max(0, due.Sub(k.cfg.Clock.Now())), k.cfg.Renew)
}

// untilFence is the time left before st's fence on the keeper's clock.
func (k *Keeper) untilFence(st Status) time.Duration {
	return time.UnixMilli(st.FenceUnixMs).Sub(k.cfg.Clock.Now())
}

func jitter(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + rand.N(hi-lo)
}

func (k *Keeper) setProblem(p string) {
	k.mu.Lock()
	k.st.Problem = p
	k.mu.Unlock()
}

// ClaimOnce runs one claim round now, as Run does when it holds no number (benchmarks and tools).
func (k *Keeper) ClaimOnce(ctx context.Context) error { return k.claim(ctx) }

// claim checks the table and walks the range from a random start until one conditional claim
// succeeds.
func (k *Keeper) claim(ctx context.Context) error {
	tid, err := CheckTable(ctx, k.cfg.Store, k.settings())
	if err != nil {
		res := "error"
		if errors.Is(err, ErrRestored) {
			res = "restored"
		}
		k.claims.WithLabelValues(res).Inc()
		k.noteProblem("claim", err)
		return err
	}
	r := k.cfg.Range
	start := rand.N(r.Size())
	for i := range r.Size() {
		m := r.Lo + (start+i)%r.Size()
		at := k.cfg.Clock.Now()
		now := at.UnixMilli()
		expiry := now + k.cfg.Lease.Milliseconds()
		row, err := k.cfg.Store.Claim(ctx, m, k.cfg.Holder, now, expiry)
		if errors.Is(err, ErrTaken) {
			continue
		}
		if err != nil {
			k.claims.WithLabelValues("error").Inc()
			k.noteProblem("claim", err)
			return err
		}
		// The claim goes into the history before any ID can be issued under it: the audit trail
		// never shows IDs of a claim it does not hold, and a lease table restored to before its
		// first claim is told from a new one by this table's events in the history (CheckTable).
		// A claim whose event cannot be written is given back.
		if err := k.cfg.Store.AppendHistory(ctx, Event{Machine: m, AtUnixMs: now, Kind: KindClaim, Holder: k.cfg.Holder, Epoch: row.Epoch, ExpiryUnixMs: expiry, TableID: tid}); err != nil {
			k.log.Error("lease history append failed: giving the number back", "machine", m, "event", KindClaim, "error", err)
			_ = k.cfg.Store.Release(ctx, m, k.cfg.Holder, row.Epoch, now)
			k.claims.WithLabelValues("error").Inc()
			k.noteProblem("claim", err)
			return err
		}
		// The table may have been restored between the check above and this claim (a holder can
		// pause anywhere): a claim on a restored table takes a stale row whose true holder may
		// still be issuing below its fence. Check again, after the history event is written (a
		// table restored to before its first claim is told from a new one by that event), before
		// any ID is issued under it. The check also meets rules changed meanwhile.
		if tid2, err := CheckTable(ctx, k.cfg.Store, k.settings()); err != nil || tid2 != tid {
			res := "restored"
			if err == nil {
				err = fmt.Errorf("%w: the table changed from %s to %s during the claim", ErrRestored, tid, tid2)
			} else if !errors.Is(err, ErrRestored) {
				res = "error"
			}
			if errors.Is(err, ErrRules) {
				// Nothing was issued under the claim: give it back.
				_ = k.cfg.Store.Release(ctx, m, k.cfg.Holder, row.Epoch, now)
			}
			k.claims.WithLabelValues(res).Inc()
			k.noteProblem("claim", err)
			return err
		}
		fence := expiry - k.cfg.FenceMargin.Milliseconds()
		if err := k.cfg.Generator.SetLease(k.cfg.Layout, idcore.Lease{Machine: m, FloorUnixMs: now, FenceUnixMs: fence}); err != nil {
			// The generator is stopped: give the number back at once (no ID was issued under it).
			if rerr := k.cfg.Store.Release(ctx, m, k.cfg.Holder, row.Epoch, now); rerr == nil {
				_ = k.cfg.Store.AppendHistory(ctx, Event{Machine: m, AtUnixMs: now, Kind: KindRelease, Holder: k.cfg.Holder, Epoch: row.Epoch, ExpiryUnixMs: now, TableID: tid})
			}
			return err
		}
		k.mu.Lock()
		k.st = Status{Layout: k.cfg.Layout, Held: true, Machine: m, Epoch: row.Epoch, ExpiryUnixMs: expiry,
			FenceUnixMs: fence, TableID: tid, Holder: k.cfg.Holder}
		k.floor = now
		k.due = at.Add(k.cfg.Renew)
		k.mu.Unlock()
		k.claims.WithLabelValues("ok").Inc()
		k.log.Info("claimed machine number", "machine", m, "epoch", row.Epoch, "floor_unix_ms", now,
			"lease_expiry", expiry, "fence_unix_ms", fence, "table_id", tid)
		return nil
	}
	k.claims.WithLabelValues("none_free").Inc()
	err = fmt.Errorf("%w %s", ErrNoFreeNumber, r)
	k.noteProblem("claim", err)
	return err
}

// settings are the keeper's lease settings, which the table's rules must admit.
func (k *Keeper) settings() Settings {
	return Settings{Lease: k.cfg.Lease, Renew: k.cfg.Renew, Margin: k.cfg.FenceMargin}
}

// CheckRules returns an ErrRules error naming both values when the table's metadata row holds
// rules this keeper's settings differ from: its owner refuses to start (embedded.Start). A table
// without rules yet, or a store that cannot be read now, is no reason to refuse: every claim
// round checks the rules again (CheckTable) and the first holder writes them.
func (k *Keeper) CheckRules(ctx context.Context) error {
	meta, err := k.cfg.Store.Meta(ctx)
	if err != nil || meta.Rules.IsZero() {
		return nil
	}
	if err := meta.Rules.Admits(k.settings()); err != nil {
		return fmt.Errorf("lease table of layout %s: %w", k.cfg.Layout, err)
	}
	return nil
}

func (k *Keeper) noteProblem(op string, err error) {
	if k.Status().Problem != err.Error() {
		k.log.Warn("lease "+op+" failed", "error", err)
	}
	k.setProblem(err.Error())
}

// drop takes the number away from the generator at once.
func (k *Keeper) drop(result, why string) {
	k.cfg.Generator.DropLease(k.cfg.Layout)
	k.mu.Lock()
	m := k.st.Machine
	k.st.Held = false
	k.st.Problem = why
	k.mu.Unlock()
	k.renewals.WithLabelValues(result).Inc()
	k.log.Warn("dropped machine number", "machine", m, "reason", why)
}

var errDropped = errors.New("lease: number dropped")

// renew extends the lease by the rules of docs/leases.md#renew: one attempt, which gives up at
// the fence (or after AttemptTimeout) and never sends a renewal at or after the fence.
func (k *Keeper) renew(ctx context.Context) error {
	st := k.Status()
	if k.lapsed(st) {
		return errDropped
	}
	// The attempt ends at the fence: a keeper still waiting for the store there drops the number
	// then, not when the store answers. A call given up on may still be applied by the store
	// later; it was sent before the fence, conditioned on holder and epoch, and its answer is not
	// used.
	actx, cancel := context.WithTimeout(ctx, min(AttemptTimeout, k.untilFence(st)))
	defer cancel()
	tid, err := k.cfg.Store.TableID(actx)
	if err != nil {
		k.renewals.WithLabelValues("error").Inc()
		k.noteProblem("renewal", err)
		return err
	}
	if tid != st.TableID {
		k.drop("table_changed", fmt.Sprintf("the lease table changed (was %s, now %s): restored from backup?", st.TableID, tid))
		return errDropped
	}
	// The clock is read again after the table check, which may have waited on the store: the
	// expiry is computed from now, and no renewal is sent at or after the fence.
	if k.lapsed(st) {
		return errDropped
	}
	at := k.cfg.Clock.Now()
	newExpiry := at.UnixMilli() + k.cfg.Lease.Milliseconds()
	switch err := k.cfg.Store.Renew(actx, st.Machine, st.Holder, st.Epoch, newExpiry); {
	case errors.Is(err, ErrLost):
		k.drop("lost", "the renewal's condition failed: another holder, epoch or a quarantine")
		return errDropped
	case err != nil:
		k.renewals.WithLabelValues("error").Inc()
		k.noteProblem("renewal", err)
		return err
	}
	// The table may have been restored between the check above and this renewal (a holder can
	// pause anywhere): a renewal that lands on a restored table, before its restore fence, matches
	// the stale row's holder and epoch, while the number may meanwhile have been claimed in the
	// table as it was. Check again before the fence moves.
	if tid2, err := k.cfg.Store.TableID(actx); err != nil || tid2 != st.TableID {
		if err != nil {
			k.renewals.WithLabelValues("error").Inc()
			k.noteProblem("renewal", err)
			return err
		}
		k.drop("table_changed", fmt.Sprintf("the lease table changed during the renewal (was %s, now %s): restored from backup?", st.TableID, tid2))
		return errDropped
	}
	// The fence comes from the expiry written, never from when the reply arrived. A reply that
	// arrives after the old fence still moves it (the renewal was sent before it, and its
	// condition held when the store applied it); the generator issued nothing meanwhile.
	fence := newExpiry - k.cfg.FenceMargin.Milliseconds()
	k.mu.Lock()
	floor := k.floor
	k.mu.Unlock()
	if err := k.cfg.Generator.SetLease(k.cfg.Layout, idcore.Lease{Machine: st.Machine, FloorUnixMs: floor, FenceUnixMs: fence}); err != nil {
		return err
	}
	k.mu.Lock()
	if k.st.Held && k.st.Machine == st.Machine && k.st.Epoch == st.Epoch {
		k.st.ExpiryUnixMs, k.st.FenceUnixMs, k.st.Problem = newExpiry, fence, ""
		k.due = at.Add(k.cfg.Renew)
	}
	k.mu.Unlock()
	k.renewals.WithLabelValues("ok").Inc()
	k.log.Debug("renewed", "machine", st.Machine, "epoch", st.Epoch, "lease_expiry", newExpiry)
	return nil
}

// lapsed drops st's number when the keeper's clock has reached its fence (no lapsed renewals: the
// lease may have been taken over, or resurrected by a restore).
func (k *Keeper) lapsed(st Status) bool {
	now := k.cfg.Clock.Now().UnixMilli()
	if now < st.FenceUnixMs {
		return false
	}
	k.drop("lapsed", fmt.Sprintf("own clock reached the fence (%d ≥ %d) before a renewal succeeded", now, st.FenceUnixMs))
	return true
}

// Release gives the number back after the owner stopped the generator (lastIssuedUnixMs is what
// Generator.Stop returned): lease_expiry becomes the later of now and that timestamp, so the next
// holder's floor lies above every ID this one made. Conditioned on holder and epoch.
func (k *Keeper) Release(ctx context.Context, lastIssuedUnixMs int64) error {
	st := k.Status()
	if !st.Held {
		return nil
	}
	k.cfg.Generator.DropLease(k.cfg.Layout)
	expiry := max(k.cfg.Clock.Now().UnixMilli(), lastIssuedUnixMs)
	if expiry >= st.ExpiryUnixMs {
		// Not earlier than the lease already is: nothing to give back.
		expiry = st.ExpiryUnixMs
	}
	err := k.cfg.Store.Release(ctx, st.Machine, st.Holder, st.Epoch, expiry)
	k.mu.Lock()
	k.st.Held = false
	k.mu.Unlock()
	if err != nil {
		k.log.Warn("release failed; the number frees itself when the lease expires", "machine", st.Machine, "error", err)
		return err
	}
	k.log.Info("released machine number", "machine", st.Machine, "epoch", st.Epoch, "lease_expiry", expiry)
	if err := k.cfg.Store.AppendHistory(ctx, Event{Machine: st.Machine, AtUnixMs: k.cfg.Clock.Now().UnixMilli(), Kind: KindRelease, Holder: st.Holder, Epoch: st.Epoch, ExpiryUnixMs: expiry, TableID: st.TableID}); err != nil {
		k.log.Error("lease history append failed", "machine", st.Machine, "event", KindRelease, "error", err)
	}
	return nil
}
