package idcore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Settings configure a Generator. The zero value is valid: every field's comment gives its default.
type Settings struct {
	// Schedule is the layout schedule. Default: ScheduleV2.
	Schedule Schedule
	// Region is the region number written into layouts with a region field. Default: 0.
	Region int
	// Clock is the wall and monotonic clock. Default: SystemClock.
	Clock Clock
	// Health reports the clock's discipline. Default: KernelHealth.
	Health HealthSource
	// ClockCheck is ClockStrict (default) or ClockWarn.
	ClockCheck ClockCheck
	// BackStepWait is how far behind the last issued timestamp the clock may be and still be
	// waited for; beyond it the generator refuses (clock_backwards). Default: 5 ms.
	BackStepWait time.Duration
	// ErrorLimit is the largest estimated clock error, and the largest forward jump, accepted.
	// Default: 5 ms.
	ErrorLimit time.Duration
	// JumpHold is how long the clock stays unhealthy after a forward jump. Default: 10 s.
	JumpHold time.Duration
	// Logger receives state changes (never one line per ID). Default: discard.
	Logger *slog.Logger
}

// Lease is a machine number held for one layout, and the bounds the lease layer puts on the
// timestamps issued under it (docs/leases.md#the-floor, docs/leases.md#the-fence).
type Lease struct {
	// Machine is the machine number.
	Machine int
	// FloorUnixMs: no ID under this lease has a timestamp at or below it (the claim's :now).
	FloorUnixMs int64
	// FenceUnixMs: no ID under this lease has a timestamp at or after it (the written lease
	// expiry minus the fence margin).
	FenceUnixMs int64
}

// slot is one layout period of the schedule and the machine number held for it.
type slot struct {
	start  int64 // the period's first timestamp, ms after Epoch
	layout Layout
	maxSeq int

	configured bool // a lease was ever set for this period's layout
	held       bool
	machine    int
	floor      int64 // ms after Epoch
	fence      int64 // ms after Epoch
	base       int64 // the region and machine fields, in place
}

// Generator issues IDs for one process: one machine number per layout period, one last_ms and
// sequence. It is safe for concurrent use; no wait happens under its lock.
type Generator struct {
	// turn admits one batch at a time, in arrival order (a channel's blocked senders queue FIFO).
	turn   chan struct{}
	sched  Schedule
	region int
	clock  Clock
	nowMs  func() int64 // the wall clock in Unix ms
	sys    *systemClock // the system clock, called directly on the hot path; nil when injected
	health HealthSource
	mode   ClockCheck
	backMs int64
	errLim time.Duration
	hold   time.Duration
	log    *slog.Logger
	watch  clockWatch // the clock's health (clock.go)

	mu      sync.Mutex
	lastMs  int64 // ms after Epoch of the last issued ID; -1 before the first
	seq     int   // sequence of the last issued ID
	cur     current
	slots   []slot
	stopped bool
	issued  uint64
	waits   [3]uint64 // by waitCause

	refused [len(refusals)]atomic.Uint64

	tickMu     sync.Mutex
	tickTarget int64         // the timestamp the current sleeper waits for
	tickCh     chan struct{} // closed when that sleeper wakes
}

// current is what the last full admission (admitLocked) established for lastMs, so that the
// next IDs of the same millisecond are decided by two comparisons (Next's fast path). Valid only
// while ok; every change to what admitLocked reads under g.mu other than the clock (a lease set,
// renewed, dropped or expected, Stop) clears ok, and only issueLocked sets it, with lastMs.
//
// For a timestamp equal to lastMs, every check of admitLocked but the clock watch's refusal and
// the sequence gives the answer it gave for lastMs: the wall clock is at or after the epoch, not
// behind lastMs, within the timestamp bits; the period (so the layout and slot) is the same; the
// slot is held, its floor below and its fence above, since none of them changed. The fast path
// still reads the wall clock, the refusal and the sequence for every ID.
type current struct {
	ok     bool
	prefix int64 // lastMs<<TimestampShift | the slot's region and machine fields
	maxSeq int   // the slot's layout's largest sequence
}

type waitCause int

const (
	waitBackStep waitCause = iota
	waitSequence
	waitFloor
)

var waitCauseNames = [...]string{"back_step", "sequence", "floor"}

// NewGenerator validates s and returns a generator. It checks the clock once; it holds no machine
// number until SetLease.
func NewGenerator(s Settings) (*Generator, error) {
	if s.Schedule.name == "" {
		s.Schedule = ScheduleV2()
	}
	if s.Clock == nil {
		s.Clock = SystemClock()
	}
	if s.Health == nil {
		s.Health = KernelHealth()
	}
	if s.BackStepWait == 0 {
		s.BackStepWait = 5 * time.Millisecond
	}
	if s.ErrorLimit == 0 {
		s.ErrorLimit = 5 * time.Millisecond
	}
	if s.JumpHold == 0 {
		s.JumpHold = 10 * time.Second
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case s.BackStepWait < 0 || s.BackStepWait > time.Second:
		return nil, fmt.Errorf("idcore: back-step wait %v out of range (0–1s)", s.BackStepWait)
	case s.ErrorLimit < 0, s.JumpHold < 0:
		return nil, fmt.Errorf("idcore: negative clock limit")
	case s.ClockCheck != ClockStrict && s.ClockCheck != ClockWarn:
		return nil, fmt.Errorf("idcore: unknown clock check %d", s.ClockCheck)
	}
	for _, p := range s.Schedule.periods {
		if p.Layout.HasRegion() && (s.Region < 0 || s.Region > p.Layout.MaxRegion()) {
			return nil, fmt.Errorf("%w: region %d does not fit layout %s (0–%d)", ErrInvalidField, s.Region, p.Layout.name, p.Layout.MaxRegion())
		}
	}
	g := &Generator{
		turn:   make(chan struct{}, 1),
		sched:  s.Schedule,
		region: s.Region,
		clock:  s.Clock,
		health: s.Health,
		mode:   s.ClockCheck,
		backMs: s.BackStepWait.Milliseconds(),
		errLim: s.ErrorLimit,
		hold:   s.JumpHold,
		log:    s.Logger,
		lastMs: -1,
		slots:  make([]slot, len(s.Schedule.periods)),
	}
	g.nowMs = func() int64 { return g.clock.Now().UnixMilli() }
	if mc, ok := s.Clock.(interface{ UnixMilli() int64 }); ok {
		g.nowMs = mc.UnixMilli
	}
	g.sys, _ = s.Clock.(*systemClock)
	for i, p := range s.Schedule.periods {
		g.slots[i] = slot{start: p.Start, layout: p.Layout, maxSeq: p.Layout.MaxSequence()}
	}
	if g.mode == ClockWarn {
		g.log.Warn("clock check is in warn mode: IDs are issued even when the clock is not disciplined; never use this in production")
	}
	g.CheckClock()
	return g, nil
}

// Schedule returns the generator's schedule.
func (g *Generator) Schedule() Schedule { return g.sched }

// Region returns the region number the generator writes.
func (g *Generator) Region() int { return g.region }

// SetLease gives the generator a machine number for the named layout, or extends the one it
// holds (a renewal: same machine, later fence). A new number starts above both its floor and
// every timestamp already issued, so IDs stay strictly increasing across a change of number.
func (g *Generator) SetLease(layout string, l Lease) error {
	i := g.periodIndex(layout)
	if i < 0 {
		return fmt.Errorf("%w: layout %q is not in schedule %s", ErrLayoutNotConfigured, layout, g.sched.name)
	}
	lay := g.sched.periods[i].Layout
	if l.Machine < 0 || l.Machine > lay.MaxMachine() {
		return fmt.Errorf("%w: machine %d (layout %s holds 0–%d)", ErrInvalidField, l.Machine, layout, lay.MaxMachine())
	}
	floor, fence := l.FloorUnixMs-EpochUnixMs, l.FenceUnixMs-EpochUnixMs
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return fmt.Errorf("%w: generator stopped", ErrNoLease)
	}
	g.cur.ok = false
	s := &g.slots[i]
	if s.held && s.machine == l.Machine {
		s.floor = max(s.floor, floor)
		s.fence = fence
		return nil
	}
	s.configured, s.held, s.machine = true, true, l.Machine
	s.floor, s.fence = max(floor, g.lastMs), fence
	s.base = lay.compose(0, g.region, l.Machine, 0).Int64()
	g.log.Info("machine number set", "layout", layout, "machine", l.Machine,
		"floor_unix_ms", s.floor+EpochUnixMs, "fence_unix_ms", fence+EpochUnixMs)
	return nil
}

// ExpectLease marks the named layout as one the generator will hold a number for, so that until
// the number arrives its refusals say no_lease rather than layout_not_configured. Keepers call it.
func (g *Generator) ExpectLease(layout string) error {
	i := g.periodIndex(layout)
	if i < 0 {
		return fmt.Errorf("%w: layout %q is not in schedule %s", ErrLayoutNotConfigured, layout, g.sched.name)
	}
	g.mu.Lock()
	g.cur.ok = false
	g.slots[i].configured = true
	g.mu.Unlock()
	return nil
}

// DropLease stops issuing under the named layout's machine number at once.
func (g *Generator) DropLease(layout string) {
	i := g.periodIndex(layout)
	if i < 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cur.ok = false
	if g.slots[i].held {
		g.log.Warn("machine number dropped", "layout", layout, "machine", g.slots[i].machine)
	}
	g.slots[i].held = false
}

// Stop stops issuing for good (before a lease release) and returns the last issued timestamp in
// Unix ms (or 0 when nothing was issued). Every later Next refuses with ErrNoLease.
func (g *Generator) Stop() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	g.cur.ok = false
	for i := range g.slots {
		g.slots[i].held = false
	}
	if g.lastMs < 0 {
		return 0
	}
	return g.lastMs + EpochUnixMs
}

// LastUnixMs returns the timestamp of the last issued ID in Unix ms (0 before the first).
func (g *Generator) LastUnixMs() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lastMs < 0 {
		return 0
	}
	return g.lastMs + EpochUnixMs
}

func (g *Generator) periodIndex(layout string) int {
	for i, p := range g.sched.periods {
		if p.Layout.name == layout {
			return i
		}
	}
	return -1
}

// Next returns a new ID, strictly greater than every ID this generator issued before. It waits
// (outside its lock, cancellable by ctx) when the clock is behind by at most the back-step wait,
// when the millisecond's sequence is used up, or until the clock passes a new lease's floor.
//
// Per ID it reads the clock watch's refusal and the wall clock under its lock. When the wall clock
// is still in the millisecond of the last issued ID, that millisecond's sequence is not used up,
// and nothing else admitLocked reads changed since it admitted that millisecond (current), the ID
// is issued at once; otherwise admitLocked decides with every check. Either way the same checks
// hold for every ID issued.
func (g *Generator) Next(ctx context.Context) (ID, error) {
	g.mu.Lock()
	if g.cur.ok && g.watch.refusal.Load() == nil && g.seq < g.cur.maxSeq {
		var ms int64
		if g.sys != nil {
			ms = g.sys.UnixMilli() // wallMs, inlined
		} else {
			ms = g.nowMs()
		}
		if ms-EpochUnixMs == g.lastMs {
			g.seq++
			g.issued++
			// The sequence is the least significant field of every layout.
			id := ID(g.cur.prefix | int64(g.seq))
			g.mu.Unlock()
			return id, nil
		}
	}
	g.mu.Unlock()
	return g.next(ctx)
}

// next is Next without its fast path: every ID decided by admitLocked.
func (g *Generator) next(ctx context.Context) (ID, error) {
	var a admission
	for {
		g.mu.Lock()
		id, err := g.issueLocked(&a)
		g.mu.Unlock()
		if err != nil {
			return 0, g.refuse(err)
		}
		if !a.wait {
			return id, nil
		}
		if err := g.waitFor(ctx, a.untilMs, a.cause); err != nil {
			return 0, err
		}
	}
}

// NextBatch returns n new IDs (1 ≤ n), strictly increasing, made in one pass; it may span
// milliseconds. On a refusal it returns the error and no IDs.
func (g *Generator) NextBatch(ctx context.Context, n int) ([]ID, error) {
	return g.AppendBatch(ctx, make([]ID, 0, max(n, 0)), n)
}

// AppendBatch appends n new IDs to dst, as NextBatch. On a refusal it returns dst unchanged and
// the error; IDs issued before the refusal are discarded, never reused.
//
// Batches take turns in arrival order, and a batch takes all the sequence it needs from each
// millisecond. At saturation a batch waits for the batches ahead of it; without turns every new
// millisecond was a race that some callers kept losing (tails 100 times the median). Single IDs
// (Next) do not queue behind batches.
func (g *Generator) AppendBatch(ctx context.Context, dst []ID, n int) ([]ID, error) {
	if n < 1 {
		return dst, fmt.Errorf("idcore: batch size %d, want at least 1", n)
	}
	select {
	case g.turn <- struct{}{}:
	case <-ctx.Done():
		return dst, ctx.Err()
	}
	defer func() { <-g.turn }()
	start := len(dst)
	var a admission
	for len(dst)-start < n {
		g.mu.Lock()
		id, err := g.issueLocked(&a)
		if err == nil && !a.wait {
			dst = append(dst, id)
			// The rest of this millisecond's sequence: the same checks hold for every ID in it,
			// as the timestamp, floor and fence do not change.
			room := g.slotAt(g.lastMs).maxSeq - g.seq
			more := min(room, n-(len(dst)-start))
			for k := 1; k <= more; k++ {
				dst = append(dst, id+ID(k))
			}
			g.seq += more
			g.issued += uint64(more)
		}
		g.mu.Unlock()
		if err != nil {
			return dst[:start], g.refuse(err)
		}
		if a.wait {
			if err := g.waitFor(ctx, a.untilMs, a.cause); err != nil {
				return dst[:start], err
			}
		}
	}
	return dst, nil
}

// slotAt returns the slot of the period holding ts.
func (g *Generator) slotAt(ts int64) *slot {
	i := len(g.slots) - 1
	for i > 0 && ts < g.slots[i].start {
		i--
	}
	return &g.slots[i]
}

// wallMs reads the wall clock in Unix ms.
func (g *Generator) wallMs() int64 {
	if g.sys != nil {
		return g.sys.UnixMilli()
	}
	return g.nowMs()
}

// issueLocked makes one ID, or leaves admitLocked's decision to wait in a (a.wait), or refuses,
// as admitLocked decides for the current time. a is the caller's, so that the decision is
// written once on the hot path instead of copied through two returns.
func (g *Generator) issueLocked(a *admission) (ID, error) {
	if err := g.admitLocked(a); err != nil || a.wait {
		return 0, err
	}
	g.lastMs, g.seq = a.ts, a.seq
	g.issued++
	g.cur = current{ok: true, prefix: a.ts<<TimestampShift | a.slot.base, maxSeq: a.slot.maxSeq}
	// The sequence is the least significant field of every layout.
	return ID(g.cur.prefix | int64(a.seq)), nil
}

// admission is admitLocked's decision when it does not refuse: issue now with ts, seq and slot,
// or (wait) wait until the wall clock reaches untilMs, then decide again.
type admission struct {
	ts   int64 // the timestamp to issue with, ms after Epoch
	seq  int
	slot *slot

	wait    bool
	untilMs int64     // with wait: the timestamp (ms after Epoch) the wall clock must reach
	cause   waitCause // with wait: why it waits
}

// waitUntil is the decision to wait until the wall clock reaches untilMs (ms after Epoch).
func waitUntil(untilMs int64, cause waitCause) admission {
	return admission{wait: true, untilMs: untilMs, cause: cause}
}

// admitLocked decides whether an ID may be issued now. It reads the wall clock and writes to a
// the timestamp, sequence and slot to issue with, or a wait until the wall clock reaches a
// timestamp before deciding again; or it returns the refusal (a is then left as it was). It issues nothing. Every ID (Next, AppendBatch) and
// every readiness answer (Ready) is decided here, against the clock's health, last_ms, the end
// of the timestamp bits, the machine number held for the timestamp's period, its floor and its
// fence.
func (g *Generator) admitLocked(a *admission) error {
	if g.stopped {
		return fmt.Errorf("%w: generator stopped", ErrNoLease)
	}
	if p := g.watch.refusal.Load(); p != nil {
		return *p
	}
	ts := g.wallMs() - EpochUnixMs
	seq := 0
	switch {
	case ts < 0:
		return fmt.Errorf("%w: wall clock is before the epoch", ErrClockUnsynced)
	case ts < g.lastMs:
		if g.lastMs-ts > g.backMs {
			return fmt.Errorf("%w: %d ms behind the last issued timestamp", ErrClockBackwards, g.lastMs-ts)
		}
		*a = waitUntil(g.lastMs, waitBackStep)
		return nil
	case ts == g.lastMs:
		seq = g.seq + 1
	}
	if ts > MaxTimestamp {
		return ErrTimestampExhausted
	}
	s := g.slotAt(ts)
	switch {
	case !s.held:
		return s.unheld()
	case ts >= s.fence:
		return fmt.Errorf("%w: layout %s machine %d", ErrFence, s.layout.name, s.machine)
	case ts <= s.floor:
		if s.floor-ts > g.backMs {
			return fmt.Errorf("%w: %d ms behind the lease floor", ErrClockBackwards, s.floor-ts)
		}
		*a = waitUntil(s.floor+1, waitFloor)
		return nil
	case seq > s.maxSeq:
		*a = waitUntil(ts+1, waitSequence)
		return nil
	}
	*a = admission{ts: ts, seq: seq, slot: s}
	return nil
}

func (s *slot) unheld() error {
	if !s.configured {
		return fmt.Errorf("%w: no machine number for layout %s", ErrLayoutNotConfigured, s.layout.name)
	}
	return fmt.Errorf("%w: layout %s", ErrNoLease, s.layout.name)
}

func (g *Generator) refuse(err error) error {
	if i := reasonIndex(err); i >= 0 {
		g.refused[i].Add(1)
	}
	return err
}

// waitFor waits until the wall clock reaches timestamp untilMs (ms after Epoch). One waiter sleeps for a
// given millisecond; the others wait for it to wake them, so many goroutines at saturation cost
// one precise sleep per millisecond, not one each.
func (g *Generator) waitFor(ctx context.Context, untilMs int64, cause waitCause) error {
	g.mu.Lock()
	g.waits[cause]++
	g.mu.Unlock()
	g.tickMu.Lock()
	if ch := g.tickCh; ch != nil && g.tickTarget >= untilMs {
		g.tickMu.Unlock()
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ch := make(chan struct{})
	g.tickTarget, g.tickCh = untilMs, ch
	g.tickMu.Unlock()
	var err error
	if wait := time.Duration(untilMs+EpochUnixMs)*time.Millisecond - time.Duration(g.clock.Now().UnixNano()); wait > 0 {
		err = g.clock.Sleep(ctx, wait)
	} else {
		err = ctx.Err()
	}
	g.tickMu.Lock()
	if g.tickCh == ch {
		g.tickCh = nil
	}
	g.tickMu.Unlock()
	close(ch)
	return err
}

// Ready reports whether the generator can issue an ID now, and if not, why: admitLocked decides,
// as for every ID, so the answer is the refusal Next would return now. A wait Next would make
// (a step back or a floor within the back-step wait, a used-up millisecond) is ready. It issues
// nothing and counts no refusal.
func (g *Generator) Ready() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var a admission
	return g.admitLocked(&a)
}

// Held returns the machine number held for the named layout, if any, and its fence in Unix ms.
func (g *Generator) Held(layout string) (machine int, fenceUnixMs int64, ok bool) {
	i := g.periodIndex(layout)
	if i < 0 {
		return 0, 0, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.slots[i]
	return s.machine, s.fence + EpochUnixMs, s.held
}
