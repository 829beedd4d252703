package idcore

import "errors"

// Refusals. A generator returns one of these (possibly wrapped with detail) instead of an ID it is
// not sure of. Reason maps each to the stable name used as a metric label and in API errors.
var (
	// ErrClockBackwards: the wall clock is behind the last issued timestamp by more than the
	// back-step wait (5 ms by default).
	ErrClockBackwards = errors.New("idcore: clock moved backwards")
	// ErrClockUnsynced: the clock health source reports the clock unsynchronized, its estimated
	// error above the limit, or a forward jump (strict mode only).
	ErrClockUnsynced = errors.New("idcore: clock is not synchronized")
	// ErrFence: the timestamp has reached the lease fence (lease expiry minus the margin).
	ErrFence = errors.New("idcore: lease fence reached")
	// ErrNoLease: the generator holds no machine number for the current layout period.
	ErrNoLease = errors.New("idcore: no machine number held")
	// ErrLayoutNotConfigured: the timestamp falls in a layout period the generator was not set up for.
	ErrLayoutNotConfigured = errors.New("idcore: layout not configured for this period")
	// ErrTimestampExhausted: 41 bits of milliseconds after the epoch have run out (2095-09-07).
	ErrTimestampExhausted = errors.New("idcore: timestamp bits exhausted")
)

// Input errors: returned by parsers, Compose and constructors, never by Next.
var (
	ErrInvalidID     = errors.New("idcore: invalid id")
	ErrInvalidLayout = errors.New("idcore: invalid layout")
	ErrInvalidField  = errors.New("idcore: field value out of range")
)

var refusals = [...]struct {
	err    error
	reason string
}{
	{ErrClockBackwards, "clock_backwards"},
	{ErrClockUnsynced, "clock_unsynced"},
	{ErrFence, "fence"},
	{ErrNoLease, "no_lease"},
	{ErrLayoutNotConfigured, "layout_not_configured"},
	{ErrTimestampExhausted, "timestamp_exhausted"},
}

// Reasons lists every refusal reason name, in a fixed order.
func Reasons() []string {
	out := make([]string, len(refusals))
	for i, r := range refusals {
		out[i] = r.reason
	}
	return out
}

// Reason returns the stable name of a refusal ("clock_backwards", "fence", …), or "" when err is
// not a refusal.
func Reason(err error) string {
	if i := reasonIndex(err); i >= 0 {
		return refusals[i].reason
	}
	return ""
}

func reasonIndex(err error) int {
	if err == nil {
		return -1
	}
	for i, r := range refusals {
		if errors.Is(err, r.err) {
			return i
		}
	}
	return -1
}
