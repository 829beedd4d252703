package routes

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxDecimals bounds a number's declared decimals: a float64 holds 15 significant decimal digits.
const MaxDecimals = 15

// TimeBound is a time's "min" or "max" in a route file: a fixed RFC 3339 time
// ("2026-01-01T00:00:00Z") or one relative to the moment a value is checked: "now", "now+24h",
// "now-720h" (a Go duration: h, m, s, ms; there is no d).
type TimeBound struct {
	// At is the fixed time (in UTC); zero when Relative.
	At time.Time
	// Relative bounds are now plus Offset.
	Relative bool
	Offset   time.Duration
	text     string
}

// String is the bound as the route file wrote it.
func (b *TimeBound) String() string { return b.text }

// Time is the bound at now.
func (b *TimeBound) Time(now time.Time) time.Time {
	if b.Relative {
		return now.Add(b.Offset)
	}
	return b.At
}

// earliest and latest are the times an RFC 3339 time in UTC can write (years 0000 to 9999): a
// time's span where it declares no min or max.
var (
	earliest = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	latest   = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

const timeBoundWant = `want an RFC 3339 time ("2026-01-01T00:00:00Z") or now, now+DURATION, now-DURATION ("now+24h", a Go duration)`

// parseTimeBound reads a time's "min" or "max" as the route file wrote it (JSON).
func parseTimeBound(raw string) (*TimeBound, error) {
	var s string
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return nil, fmt.Errorf("%s", timeBoundWant)
	}
	if rest, ok := strings.CutPrefix(s, "now"); ok {
		b := &TimeBound{Relative: true, text: s}
		if rest == "" {
			return b, nil
		}
		sign := rest[0]
		d, err := time.ParseDuration(rest[1:])
		if (sign != '+' && sign != '-') || err != nil || rest[1:] == "" || rest[1] == '+' || rest[1] == '-' {
			return nil, fmt.Errorf("%s", timeBoundWant)
		}
		if sign == '-' {
			d = -d
		}
		b.Offset = d
		return b, nil
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !FourDigitYear(ts) {
		return nil, fmt.Errorf("%s", timeBoundWant)
	}
	return &TimeBound{At: ts.UTC(), text: s}, nil
}

// checkTimeBounds refuses a min after its max, where both are fixed or both relative (a fixed
// min and a relative max, or the other way round, compare only at a given moment).
func (t *Type) checkTimeBounds() error {
	lo, hi := t.MinTime, t.MaxTime
	if lo == nil || hi == nil || lo.Relative != hi.Relative {
		return nil
	}
	if (lo.Relative && lo.Offset > hi.Offset) || (!lo.Relative && lo.At.After(hi.At)) {
		return fmt.Errorf("min %s is after max %s", lo, hi)
	}
	return nil
}

// TimeSpan returns the earliest and latest time a time may take at now: its min and max, or, for
// a side it does not declare, the first instant of year 0000 or the last of year 9999 (what RFC
// 3339 can write).
func (t *Type) TimeSpan(now time.Time) (lo, hi time.Time) {
	lo, hi = earliest, latest
	if t.MinTime != nil {
		lo = t.MinTime.Time(now)
	}
	if t.MaxTime != nil {
		hi = t.MaxTime.Time(now)
	}
	return lo, hi
}

// InTimeBounds says whether ts is within the declared min and max, inclusive, the relative ones
// taken at now.
func (t *Type) InTimeBounds(ts, now time.Time) bool {
	return (t.MinTime == nil || !ts.Before(t.MinTime.Time(now))) && (t.MaxTime == nil || !ts.After(t.MaxTime.Time(now)))
}

// HasTimeBounds says whether a time declares a min or a max.
func (t *Type) HasTimeBounds() bool { return t.MinTime != nil || t.MaxTime != nil }

// TimeBounds writes a time's declared min and max as "2026-01-01T00:00:00Z–now+24h" ("…" for a
// side not declared).
func (t *Type) TimeBounds() string {
	lo, hi := "…", "…"
	if t.MinTime != nil {
		lo = t.MinTime.String()
	}
	if t.MaxTime != nil {
		hi = t.MaxTime.String()
	}
	return lo + "–" + hi
}

// InDecimals says whether a number has at most its declared decimals (true when it declares
// none): its digits after the point, written shortest (0.07 has 2, 1e-7 has 7, 1.50 has 1).
func (t *Type) InDecimals(f float64) bool {
	if t.Decimals == nil {
		return true
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	i := strings.IndexByte(s, '.')
	return i < 0 || len(s)-i-1 <= *t.Decimals
}

// AppendNumber writes a number anew in plain decimal notation, shortest (1.5 for 1.50, 15e-1 or
// 0.15E1; 0 for -0), so that its spelling carries nothing beyond its value.
func AppendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		f = 0 // -0 as 0
	}
	return strconv.AppendFloat(dst, f, 'f', -1, 64)
}
