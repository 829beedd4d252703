package gateway

import (
	"strconv"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

// Detector tells whether a value looks like an internal ID: a positive 64-bit integer whose
// timestamp bits (the top 41 of every layout) fall inside the window of times at which IDs have
// been issued. It is the backstop behind the route allowlist: a declared plain field or header
// that holds such a value is refused, never passed on.
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
	lo = max(since.UnixMilli()-idcore.EpochUnixMs, 0) << idcore.TimestampShift
	hiMs := now().Add(24*time.Hour).UnixMilli() - idcore.EpochUnixMs
	hi = min(hiMs, 1<<41-1)<<idcore.TimestampShift | (1<<idcore.TimestampShift - 1)
	return lo, hi
}

// scanner finds internal-ID-looking runs in text with one window computed per response.
type scanner struct{ lo, hi int64 }

func (d Detector) scanner() scanner {
	lo, hi := d.window()
	return scanner{lo, hi}
}

func (s scanner) plausible(v int64) bool { return v >= s.lo && v <= s.hi && v > 0 }

// plausibleFloat is plausible for a JSON number that is not an integer literal (1.2e17).
func (s scanner) plausibleFloat(f float64) bool { return f >= float64(s.lo) && f <= float64(s.hi) }

// find returns the first run of text that is an internal ID written in decimal (a maximal run
// of digits, leading zeros ignored) or in hexadecimal (a maximal run of hex digits with at least
// one letter), or "" when there is none.
func (s scanner) find(text []byte) string {
	for i := 0; i < len(text); {
		c := text[i]
		if !isHex(c) {
			i++
			continue
		}
		j, letters := i, false
		for j < len(text) && isHex(text[j]) {
			letters = letters || text[j] > '9'
			j++
		}
		// "0x1a…" splits at the x: the 0 is a run of its own and the digits after it another.
		if s.hit(text[i:j], letters) {
			return string(text[i:j])
		}
		i = j
	}
	return ""
}

func (s scanner) hit(run []byte, letters bool) bool {
	_, ok := s.value(run, letters)
	return ok
}

// value parses a run of digits (hex when it has letters) and says whether it is a plausible ID.
func (s scanner) value(run []byte, letters bool) (int64, bool) {
	for len(run) > 1 && run[0] == '0' {
		run = run[1:]
	}
	if letters {
		if len(run) > 16 || len(run) < 10 {
			return 0, false
		}
		v, err := strconv.ParseUint(string(run), 16, 63)
		return int64(v), err == nil && s.plausible(int64(v))
	}
	if len(run) > 19 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(run), 10, 64)
	return v, err == nil && s.plausible(v)
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
