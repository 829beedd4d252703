package gateway

import (
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/services/public-id/internal/scan"
)

// Detector tells whether a value looks like an internal ID: a positive 64-bit integer whose
// timestamp bits (the top 41 of every layout) fall inside the window of times at which IDs have
// been issued. It is the backstop behind the route allowlist: a declared plain field or header
// that holds such a value, in any spelling of the scanner's table (package scan, Table), is
// refused, never passed on.
//
// The window starts at Since, not at the epoch: numbers of up to 16 decimal digits (prices,
// phone and card numbers) decode to the first weeks after the epoch, and treating them as IDs
// would refuse ordinary responses. It ends a day after now, for clock error.
type Detector struct {
	// Since is the earliest time an ID was issued. Default: the epoch plus 30 days, so that no
	// number below 10^16 is taken for an ID.
	Since time.Time
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// DefaultSince is Detector's default start of the window.
var DefaultSince = idcore.Epoch.Add(30 * 24 * time.Hour)

func (d Detector) window() (lo, hi int64) {
	since, now := d.Since, time.Now
	if since.IsZero() {
		since = DefaultSince
	}
	if d.Now != nil {
		now = d.Now
	}
	lo = max(max(since.UnixMilli()-idcore.EpochUnixMs, 0)<<idcore.TimestampShift, 1)
	hiMs := now().Add(24*time.Hour).UnixMilli() - idcore.EpochUnixMs
	hi = min(hiMs, 1<<41-1)<<idcore.TimestampShift | (1<<idcore.TimestampShift - 1)
	return lo, hi
}

// scanner finds internal-ID-looking values in text with one window computed per response.
func (d Detector) scanner() scan.Scanner { return scan.New(d.window()) }
