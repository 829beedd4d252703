package idcore

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // go:linkname nanotime
)

// Clock is the source of wall time (which goes into IDs and fences) and of monotonic time (which
// times waits and detects wall-clock jumps). Tests inject their own; nil means SystemClock.
type Clock interface {
	// Now returns the current wall-clock time.
	Now() time.Time
	// Monotonic returns time elapsed on a clock that never steps, from an arbitrary origin.
	Monotonic() time.Duration
	// Sleep waits for d on the monotonic clock, or until ctx is done (returning ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock returns the host's clock.
//
// Now reads the kernel's wall clock at least once per WallRefresh of monotonic time and, in
// between, extends its last reading by the monotonic clock. The kernel slews both clocks alike, so
// the two agree to the nanosecond except across a step, which Now therefore sees within
// WallRefresh (1 ms, a fifth of the 5 ms back-step wait). A full wall-clock read costs two vDSO
// calls; the monotonic one costs one, which halves the cost of an ID.
//
// Sleep sleeps through most of a wait and spins only over its last fraction, so a wait for the
// next millisecond ends within a few microseconds of it without burning a core: the Go timer
// alone overshoots sub-millisecond waits by up to a millisecond. The spin reads the monotonic
// clock about once a microsecond, pausing the core in between (PAUSE), and yields the processor
// to the process's other goroutines every 16 reads.
func SystemClock() Clock { return defaultClock }

// WallRefresh is the longest SystemClock's Now goes without reading the kernel's wall clock.
const WallRefresh = time.Millisecond

var defaultClock = newSystemClock()

type systemClock struct {
	anchor atomic.Pointer[wallAnchor] // the last wall-clock read
	start  time.Time
}

// wallAnchor is a wall-clock reading and the monotonic clock's (runtime nanotime) just after it.
// The monotonic reading is taken after the wall clock's, so an extended reading is at most the
// gap between the two reads (tens of nanoseconds) behind the kernel's, never ahead of it: the
// next anchor's reading never goes backwards from the last extended one.
type wallAnchor struct {
	mono   int64 // nanotime
	unixNs int64
}

func newSystemClock() *systemClock {
	c := &systemClock{start: time.Now()}
	c.anchor.Store(&wallAnchor{nanotime(), c.start.UnixNano()})
	return c
}

// nanotime is the runtime's monotonic clock, the one time.Since reads, without time.Since's
// work on a time.Time (the runtime keeps this name for linkname users).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

func (c *systemClock) Now() time.Time { return time.Unix(0, c.unixNano()) }

// UnixMilli is Now().UnixMilli() without building a time.Time: the generator's hot path.
func (c *systemClock) UnixMilli() int64 { return c.unixNano() / 1e6 }

func (c *systemClock) unixNano() int64 {
	a := c.anchor.Load()
	if el := nanotime() - a.mono; el >= 0 && el < int64(WallRefresh) {
		return a.unixNs + el
	}
	ns := time.Now().UnixNano()
	c.anchor.Store(&wallAnchor{nanotime(), ns})
	return ns
}

func (c *systemClock) Monotonic() time.Duration { return time.Since(c.start) }

const (
	// spinWindow is the last part of a wait that is spun instead of slept.
	spinWindow = 120 * time.Microsecond
	// timerSlack is how much the Go timer may overshoot; longer waits use it up to this point.
	timerSlack = 1500 * time.Microsecond
	// spinPause is the PAUSE instructions (runtime.procyield, 3 instructions each) of a step of
	// the spin: about a microsecond on Intel cores since Skylake (140 cycles a PAUSE), less on
	// others; a step costs the same instructions on every core.
	spinPause = 20
	// yieldEvery is how many steps of the spin go by between two yields of the processor
	// (runtime.Gosched, about a thousand instructions): the process's other goroutines wait at
	// most that long for it, some 20 µs.
	yieldEvery = 16
)

// procyield executes PAUSE cycles times: the runtime's own spin-wait (the runtime keeps this
// name for linkname users).
//
//go:linkname procyield runtime.procyield
func procyield(cycles uint32)

func (*systemClock) Sleep(ctx context.Context, d time.Duration) error {
	_, err := sleep(ctx, d)
	return err
}

// sleep is SystemClock's Sleep; it also returns the steps of its spin.
func sleep(ctx context.Context, d time.Duration) (steps int, err error) {
	deadline := nanotime() + int64(d)
	if d > 2*timerSlack {
		t := time.NewTimer(d - timerSlack)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-t.C:
		}
	}
	if rem := time.Duration(deadline - nanotime()); rem > spinWindow {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		preciseSleep(rem - spinWindow)
	}
	for now := nanotime(); now < deadline; now = spinStep(steps) {
		if err := ctx.Err(); err != nil {
			return steps, err
		}
		steps++
	}
	return steps, ctx.Err()
}

// spinStep is one step of the spin: a pause, or every yieldEvery-th step a yield of the
// processor, then a read of the monotonic clock. Each step costs the same instructions however
// long it takes, so that a spin's cost is its steps times one step's (BenchmarkSpinStep).
func spinStep(i int) int64 {
	if i%yieldEvery == yieldEvery-1 {
		runtime.Gosched()
	} else {
		procyield(spinPause)
	}
	return nanotime()
}

// KernelClock is what the kernel says about the clock's discipline.
type KernelClock struct {
	// Synchronized is false while the kernel reports the clock unsynchronized (STA_UNSYNC).
	Synchronized bool
	// EstimatedError is the kernel's estimate of the clock's error (adjtimex esterror).
	EstimatedError time.Duration
	// MaxError is the kernel's maximum error bound (adjtimex maxerror).
	MaxError time.Duration
}

// HealthSource reports the clock's discipline. Tests inject their own; nil means KernelHealth.
type HealthSource interface {
	ReadClock() (KernelClock, error)
}

// KernelHealth returns the host kernel's view of the clock (Linux: adjtimex). On systems without
// it, every read fails, which a strict generator treats as unhealthy.
func KernelHealth() HealthSource { return kernelHealth{} }

type kernelHealth struct{}

// ClockCheck selects what a generator does when the clock is unhealthy.
type ClockCheck int

const (
	// ClockStrict refuses IDs (clock_unsynced) and reports unhealthy. Production uses it.
	ClockStrict ClockCheck = iota
	// ClockWarn issues anyway, loudly: logs, a metric and the health detail say so. For development
	// machines whose clock is not disciplined; never for production.
	ClockWarn
)

func (c ClockCheck) String() string {
	if c == ClockWarn {
		return "warn"
	}
	return "strict"
}

// ParseClockCheck parses "strict" or "warn".
func ParseClockCheck(s string) (ClockCheck, error) {
	switch s {
	case "strict":
		return ClockStrict, nil
	case "warn":
		return ClockWarn, nil
	}
	return 0, fmt.Errorf("idcore: unknown clock check %q (want strict or warn)", s)
}

// ClockStatus is the outcome of the last clock check.
type ClockStatus struct {
	Healthy bool
	// Problem says what is wrong when not Healthy: "unsynchronized", "estimated_error",
	// "forward_jump" or "read_error".
	Problem        string
	Detail         string
	EstimatedError time.Duration
	Mode           ClockCheck
	CheckedAt      time.Time
}

// clockWatch is a generator's view of its clock's health: the last check, what the next one needs
// to see a forward jump, and the refusal a strict generator gives until a check finds the clock
// healthy again.
type clockWatch struct {
	mu        sync.Mutex
	status    ClockStatus
	lastWall  time.Time
	lastMono  time.Duration
	jumpUntil time.Duration
	// refusal is ErrClockUnsynced, with the check's detail, while a strict generator must refuse;
	// nil while it may issue. The issue path reads it without a lock.
	refusal atomic.Pointer[error]
}

// CheckClock reads the clock's health once and returns it. Until the next check, a strict
// generator refuses while it is unhealthy. WatchClock calls it periodically.
func (g *Generator) CheckClock() ClockStatus {
	w := &g.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	wall, mono, paired := g.readClocks()
	st := ClockStatus{Healthy: true, Mode: g.mode, CheckedAt: wall}
	if paired {
		if !w.lastWall.IsZero() {
			jump := wall.Sub(w.lastWall) - (mono - w.lastMono)
			if jump > g.errLim {
				w.jumpUntil = mono + g.hold
				g.log.Error("clock jumped forward", "jump", jump.String())
			}
		}
		w.lastWall, w.lastMono = wall, mono
	}
	kc, err := g.health.ReadClock()
	switch {
	case err != nil:
		st.Healthy, st.Problem, st.Detail = false, "read_error", err.Error()
	case !kc.Synchronized:
		st.Healthy, st.Problem, st.Detail = false, "unsynchronized", "the kernel reports the clock unsynchronized"
	case kc.EstimatedError > g.errLim:
		st.Healthy, st.Problem = false, "estimated_error"
		st.Detail = fmt.Sprintf("estimated error %v above the limit %v", kc.EstimatedError, g.errLim)
	case mono < w.jumpUntil:
		st.Healthy, st.Problem, st.Detail = false, "forward_jump", "the wall clock jumped forward recently"
	}
	st.EstimatedError = kc.EstimatedError
	if st.Healthy != w.status.Healthy || st.Problem != w.status.Problem || w.status.CheckedAt.IsZero() {
		lvl := slog.LevelInfo
		if !st.Healthy {
			lvl = slog.LevelError
			if g.mode == ClockWarn {
				st.Detail += " (clock check is warn: issuing anyway)"
				lvl = slog.LevelWarn
			}
		}
		g.log.Log(context.Background(), lvl, "clock health", "healthy", st.Healthy, "problem", st.Problem,
			"detail", st.Detail, "mode", g.mode.String())
	}
	w.status = st
	if st.Healthy || g.mode == ClockWarn {
		w.refusal.Store(nil)
	} else {
		err := fmt.Errorf("%w: %s", ErrClockUnsynced, st.Detail)
		w.refusal.Store(&err)
	}
	return st
}

// readClocks reads the wall clock between two reads of the monotonic clock, so that a jump is
// measured between readings of both clocks taken at one moment. A process descheduled between
// its two reads (by the kernel, a hypervisor or the runtime) would otherwise see the stall as a
// forward jump at the next check and refuse IDs for the jump hold. A reading whose monotonic reads
// lie more than an eighth of the error limit apart is taken again, up to three times; paired is
// false if none was that tight, and the check then leaves the forward-jump detector to the next
// one (which compares with the last tight reading, so a real jump in between is still seen).
func (g *Generator) readClocks() (wall time.Time, mono time.Duration, paired bool) {
	for range 3 {
		before := g.clock.Monotonic()
		wall = g.clock.Now()
		after := g.clock.Monotonic()
		if span := after - before; span <= g.errLim/8 {
			return wall, before + span/2, true
		}
	}
	return wall, g.clock.Monotonic(), false
}

// ClockStatus returns the result of the last clock check.
func (g *Generator) ClockStatus() ClockStatus {
	g.watch.mu.Lock()
	defer g.watch.mu.Unlock()
	return g.watch.status
}

// WatchClock checks the clock every interval (on the monotonic clock) until ctx is done.
func (g *Generator) WatchClock(ctx context.Context, every time.Duration) {
	for {
		if err := g.clock.Sleep(ctx, every); err != nil {
			return
		}
		g.CheckClock()
	}
}
