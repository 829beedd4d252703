package idcore

import (
	"fmt"
	"time"
)

// The timestamp field is the same in every layout: 41 bits of milliseconds since Epoch, right
// below the sign bit. Keeping it fixed is what lets any reader find an ID's layout from its
// timestamp alone, and keeps IDs ordered across a layout cutover.
const (
	// EpochUnixMs is 2026-01-01T00:00:00Z in Unix milliseconds.
	EpochUnixMs int64 = 1767225600000
	// TimestampBits is the width of the timestamp field.
	TimestampBits = 41
	// TimestampShift is the position of the timestamp field's lowest bit.
	TimestampShift = 63 - TimestampBits
	// MaxTimestamp is the last millisecond after Epoch an ID can carry (2095-09-07T15:47:35.551Z).
	MaxTimestamp int64 = 1<<TimestampBits - 1
)

// Epoch is the custom epoch as a time.Time.
var Epoch = time.UnixMilli(EpochUnixMs).UTC()

// FieldKind names one field of a layout below the timestamp.
type FieldKind uint8

// The fields a layout can hold below the timestamp.
const (
	FieldRegion FieldKind = iota + 1
	FieldMachine
	FieldSequence
)

func (k FieldKind) String() string {
	switch k {
	case FieldRegion:
		return "region"
	case FieldMachine:
		return "machine"
	case FieldSequence:
		return "sequence"
	}
	return fmt.Sprintf("field(%d)", uint8(k))
}

// Field is one field of a layout: its kind and width in bits.
type Field struct {
	Kind FieldKind
	Bits uint
}

// Layout is a validated bit layout: the 41-bit timestamp, then its fields from the most to the
// least significant. The zero Layout is not valid; build one with NewLayout.
type Layout struct {
	name   string
	fields []Field // below the timestamp, most significant first

	regionBits, machineBits, seqBits    uint
	regionShift, machineShift, seqShift uint
}

// NewLayout validates and returns a layout. The fields below the timestamp must hold exactly one
// machine and one sequence field and at most one region field, each at least one bit wide, with
// the sequence last, adding up to 22 bits.
func NewLayout(name string, fields ...Field) (Layout, error) {
	l := Layout{name: name, fields: append([]Field(nil), fields...)}
	if name == "" {
		return Layout{}, fmt.Errorf("%w: a layout needs a name", ErrInvalidLayout)
	}
	seen := map[FieldKind]bool{}
	var total uint
	shift := uint(TimestampShift)
	for _, f := range fields {
		switch f.Kind {
		case FieldRegion, FieldMachine, FieldSequence:
		default:
			return Layout{}, fmt.Errorf("%w: %s: unknown field kind %d", ErrInvalidLayout, name, f.Kind)
		}
		if seen[f.Kind] {
			return Layout{}, fmt.Errorf("%w: %s: field %s appears twice", ErrInvalidLayout, name, f.Kind)
		}
		if f.Bits == 0 || f.Bits > TimestampShift {
			return Layout{}, fmt.Errorf("%w: %s: field %s has %d bits", ErrInvalidLayout, name, f.Kind, f.Bits)
		}
		seen[f.Kind] = true
		total += f.Bits
		if total > TimestampShift {
			break
		}
		shift -= f.Bits
		switch f.Kind {
		case FieldRegion:
			l.regionBits, l.regionShift = f.Bits, shift
		case FieldMachine:
			l.machineBits, l.machineShift = f.Bits, shift
		case FieldSequence:
			l.seqBits, l.seqShift = f.Bits, shift
		}
	}
	switch {
	case total != TimestampShift:
		return Layout{}, fmt.Errorf("%w: %s: fields below the timestamp add up to %d bits, want %d", ErrInvalidLayout, name, total, TimestampShift)
	case !seen[FieldMachine] || !seen[FieldSequence]:
		return Layout{}, fmt.Errorf("%w: %s: a layout needs a machine and a sequence field", ErrInvalidLayout, name)
	case fields[len(fields)-1].Kind != FieldSequence:
		return Layout{}, fmt.Errorf("%w: %s: the sequence must be the least significant field", ErrInvalidLayout, name)
	}
	return l, nil
}

// MustLayout is NewLayout for layouts fixed in code; it panics on an invalid layout.
func MustLayout(name string, fields ...Field) Layout {
	l, err := NewLayout(name, fields...)
	if err != nil {
		panic(err)
	}
	return l
}

// V1 is `0 | ts(41) | machine(10) | seq(12)`: 1,024 machines, 4,096 IDs per ms per machine.
func V1() Layout {
	return MustLayout("v1", Field{FieldMachine, 10}, Field{FieldSequence, 12})
}

// V2 is `0 | ts(41) | region(3) | machine(9) | seq(10)`: 8 regions, 512 machines per region,
// 1,024 IDs per ms per machine.
func V2() Layout {
	return MustLayout("v2", Field{FieldRegion, 3}, Field{FieldMachine, 9}, Field{FieldSequence, 10})
}

// Name is the layout's name ("v1", "v2").
func (l Layout) Name() string { return l.name }

// Fields returns the fields below the timestamp, most significant first.
func (l Layout) Fields() []Field { return append([]Field(nil), l.fields...) }

// HasRegion reports whether the layout carries a region number.
func (l Layout) HasRegion() bool { return l.regionBits > 0 }

// MaxRegion is the largest region number the layout holds (-1 when it has no region field).
func (l Layout) MaxRegion() int {
	if !l.HasRegion() {
		return -1
	}
	return 1<<l.regionBits - 1
}

// MaxMachine is the largest machine number the layout holds.
func (l Layout) MaxMachine() int { return 1<<l.machineBits - 1 }

// MaxSequence is the largest sequence number within one millisecond.
func (l Layout) MaxSequence() int { return 1<<l.seqBits - 1 }

// IDsPerSecond is the layout's limit for one machine number: (MaxSequence+1) × 1,000.
func (l Layout) IDsPerSecond() int64 { return int64(l.MaxSequence()+1) * 1000 }

// compose builds an ID from fields already checked to fit.
func (l Layout) compose(ts int64, region, machine, seq int) ID {
	return ID(ts<<TimestampShift |
		int64(region)<<l.regionShift |
		int64(machine)<<l.machineShift |
		int64(seq)<<l.seqShift)
}

func (l Layout) field(id ID, bits, shift uint) int {
	return int(int64(id)>>shift) & (1<<bits - 1)
}

func (l Layout) checkFields(region, machine, seq int) error {
	switch {
	case l.HasRegion() && (region < 0 || region > l.MaxRegion()):
		return fmt.Errorf("%w: region %d (layout %s holds 0–%d)", ErrInvalidField, region, l.name, l.MaxRegion())
	case !l.HasRegion() && region != 0:
		return fmt.Errorf("%w: layout %s has no region field", ErrInvalidField, l.name)
	case machine < 0 || machine > l.MaxMachine():
		return fmt.Errorf("%w: machine %d (layout %s holds 0–%d)", ErrInvalidField, machine, l.name, l.MaxMachine())
	case seq < 0 || seq > l.MaxSequence():
		return fmt.Errorf("%w: sequence %d (layout %s holds 0–%d)", ErrInvalidField, seq, l.name, l.MaxSequence())
	}
	return nil
}
