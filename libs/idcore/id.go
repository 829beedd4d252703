package idcore

import (
	"database/sql/driver"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ID is a 64-bit ID. It is never negative. In JSON it is a decimal string, because JavaScript
// loses integers above 2^53; it accepts a string or a number on input. In SQL it is a BIGINT.
type ID int64

// String returns the decimal form.
func (id ID) String() string { return strconv.FormatInt(int64(id), 10) }

// Int64 returns the ID as an int64.
func (id ID) Int64() int64 { return int64(id) }

// Timestamp returns the milliseconds after Epoch the ID carries, whatever its layout.
func (id ID) Timestamp() int64 { return int64(id) >> TimestampShift }

// Time returns the ID's creation time, whatever its layout.
func (id ID) Time() time.Time { return time.UnixMilli(EpochUnixMs + id.Timestamp()).UTC() }

// ParseID parses the canonical decimal form: digits only, no sign, no leading zeros, at most
// 2^63−1. Every ID has exactly one accepted spelling.
func ParseID(s string) (ID, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty", ErrInvalidID)
	}
	if len(s) > 19 {
		return 0, fmt.Errorf("%w: %q is longer than 19 digits (max %d)", ErrInvalidID, clip(s), int64(math.MaxInt64))
	}
	if s[0] == '-' {
		return 0, fmt.Errorf("%w: %q is negative", ErrInvalidID, s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: %q is not a decimal number", ErrInvalidID, s)
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("%w: %q has a leading zero", ErrInvalidID, s)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > math.MaxInt64 {
		return 0, fmt.Errorf("%w: %q is above 2^63-1", ErrInvalidID, s)
	}
	return ID(n), nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// AppendText appends the decimal form to b.
func (id ID) AppendText(b []byte) ([]byte, error) { return strconv.AppendInt(b, int64(id), 10), nil }

// MarshalText returns the decimal form.
func (id ID) MarshalText() ([]byte, error) { return id.AppendText(nil) }

// UnmarshalText parses the decimal form.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// MarshalJSON returns the ID as a quoted decimal string.
func (id ID) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 21)
	b = append(b, '"')
	b = strconv.AppendInt(b, int64(id), 10)
	return append(b, '"'), nil
}

// UnmarshalJSON accepts a quoted decimal string or a plain JSON integer.
func (id *ID) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return fmt.Errorf("%w: null", ErrInvalidID)
	}
	if strings.HasPrefix(s, `"`) {
		if len(s) < 2 || !strings.HasSuffix(s, `"`) {
			return fmt.Errorf("%w: unterminated string", ErrInvalidID)
		}
		s = s[1 : len(s)-1]
	}
	return id.UnmarshalText([]byte(s))
}

// Value stores the ID as a BIGINT.
func (id ID) Value() (driver.Value, error) { return int64(id), nil }

// Scan reads an ID from a BIGINT (or its decimal text).
func (id *ID) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		if v < 0 {
			return fmt.Errorf("%w: %d is negative", ErrInvalidID, v)
		}
		*id = ID(v)
		return nil
	case []byte:
		return id.UnmarshalText(v)
	case string:
		return id.UnmarshalText([]byte(v))
	case nil:
		return fmt.Errorf("%w: NULL", ErrInvalidID)
	}
	return fmt.Errorf("%w: cannot scan %T", ErrInvalidID, src)
}

// Parts are the fields of an ID below its layout: what Compose takes and Decode gives back.
type Parts struct {
	Timestamp int64 // milliseconds after Epoch
	Region    int   // 0 for layouts without a region field
	Machine   int
	Sequence  int
}

// Decoded is an ID taken apart.
type Decoded struct {
	Parts
	ID        ID
	Layout    string
	HasRegion bool
	Time      time.Time // UTC
}

// Decode takes an ID apart under the schedule: its layout is the one in force at its timestamp.
func (s Schedule) Decode(id ID) (Decoded, error) {
	if id < 0 {
		return Decoded{}, fmt.Errorf("%w: %d is negative", ErrInvalidID, int64(id))
	}
	ts := id.Timestamp()
	_, l := s.At(ts)
	d := Decoded{
		ID:        id,
		Layout:    l.name,
		HasRegion: l.HasRegion(),
		Time:      id.Time(),
		Parts: Parts{
			Timestamp: ts,
			Machine:   l.field(id, l.machineBits, l.machineShift),
			Sequence:  l.field(id, l.seqBits, l.seqShift),
		},
	}
	if l.HasRegion() {
		d.Region = l.field(id, l.regionBits, l.regionShift)
	}
	return d, nil
}

// Compose builds the ID for p under the schedule; it is the inverse of Decode.
func (s Schedule) Compose(p Parts) (ID, error) {
	if p.Timestamp < 0 || p.Timestamp > MaxTimestamp {
		return 0, fmt.Errorf("%w: timestamp %d (0–%d ms after the epoch)", ErrInvalidField, p.Timestamp, MaxTimestamp)
	}
	_, l := s.At(p.Timestamp)
	if err := l.checkFields(p.Region, p.Machine, p.Sequence); err != nil {
		return 0, err
	}
	return l.compose(p.Timestamp, p.Region, p.Machine, p.Sequence), nil
}

// Explain renders the bit diagram an SRE reads: each field with its bit range, binary value and
// decimal value, and the creation time in UTC.
func (s Schedule) Explain(id ID) (string, error) {
	d, err := s.Decode(id)
	if err != nil {
		return "", err
	}
	_, l := s.At(d.Timestamp)
	type row struct {
		name      string
		hi, lo    uint
		value     int64
		valueNote string
	}
	rows := []row{{"sign", 63, 63, 0, ""}, {"timestamp", 62, TimestampShift, d.Timestamp,
		d.Time.Format("2006-01-02T15:04:05.000Z07:00")}}
	for _, f := range l.fields {
		var shift uint
		var v int
		switch f.Kind {
		case FieldRegion:
			shift, v = l.regionShift, d.Region
		case FieldMachine:
			shift, v = l.machineShift, d.Machine
		case FieldSequence:
			shift, v = l.seqShift, d.Sequence
		}
		rows = append(rows, row{f.Kind.String(), shift + f.Bits - 1, shift, int64(v), ""})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "id %s  layout %s  schedule %s\n", id, l.name, s.name)
	bin := fmt.Sprintf("%064b", uint64(id))
	var groups []string
	for _, r := range rows {
		groups = append(groups, bin[63-r.hi:64-r.lo])
	}
	fmt.Fprintf(&b, "bits %s\n", strings.Join(groups, " | "))
	fmt.Fprintf(&b, "%-10s %-7s %s\n", "field", "bits", "value")
	for _, r := range rows {
		bits := fmt.Sprintf("%d", r.hi)
		if r.hi != r.lo {
			bits = fmt.Sprintf("%d-%d", r.hi, r.lo)
		}
		line := fmt.Sprintf("%-10s %-7s %d", r.name, bits, r.value)
		if r.valueNote != "" {
			line += " ms after 2026-01-01 = " + r.valueNote
		}
		b.WriteString(line + "\n")
	}
	return b.String(), nil
}
