package idcore

import (
	"fmt"
	"time"
)

// CutoverV1V2 is the start of the v2 period in schedule "v1-v2": 2028-01-01T00:00:00Z,
// in milliseconds after Epoch.
const CutoverV1V2 int64 = 63072000000

// Period is one entry of a schedule: from Start (milliseconds after Epoch) until the next
// period's start, IDs use Layout.
type Period struct {
	Layout Layout
	Start  int64
}

// Schedule is an ordered list of periods. An ID's layout is chosen by its timestamp alone, so any
// reader holding the schedule decodes any ID without a flag.
type Schedule struct {
	name    string
	periods []Period
}

// NewSchedule validates a schedule: the first period starts at Epoch (0), starts strictly
// increase and lie within the timestamp's range, and layout names are unique.
func NewSchedule(name string, periods ...Period) (Schedule, error) {
	if len(periods) == 0 {
		return Schedule{}, fmt.Errorf("%w: schedule %q has no periods", ErrInvalidLayout, name)
	}
	names := map[string]bool{}
	for i, p := range periods {
		if p.Layout.name == "" {
			return Schedule{}, fmt.Errorf("%w: schedule %q: period %d has no layout", ErrInvalidLayout, name, i)
		}
		if names[p.Layout.name] {
			return Schedule{}, fmt.Errorf("%w: schedule %q: layout %s used twice", ErrInvalidLayout, name, p.Layout.name)
		}
		names[p.Layout.name] = true
		switch {
		case i == 0 && p.Start != 0:
			return Schedule{}, fmt.Errorf("%w: schedule %q must start at the epoch", ErrInvalidLayout, name)
		case i > 0 && p.Start <= periods[i-1].Start:
			return Schedule{}, fmt.Errorf("%w: schedule %q: period starts must increase", ErrInvalidLayout, name)
		case p.Start > MaxTimestamp:
			return Schedule{}, fmt.Errorf("%w: schedule %q: period %s starts past the last timestamp", ErrInvalidLayout, name, p.Layout.name)
		}
	}
	return Schedule{name: name, periods: append([]Period(nil), periods...)}, nil
}

// MustSchedule is NewSchedule for schedules fixed in code; it panics on an invalid schedule.
func MustSchedule(name string, periods ...Period) Schedule {
	s, err := NewSchedule(name, periods...)
	if err != nil {
		panic(err)
	}
	return s
}

// ScheduleV2 is the default: v2 from the epoch.
func ScheduleV2() Schedule { return MustSchedule("v2", Period{V2(), 0}) }

// ScheduleV1V2 is v1 before 2028-01-01T00:00:00Z and v2 from then on.
func ScheduleV1V2() Schedule {
	return MustSchedule("v1-v2", Period{V1(), 0}, Period{V2(), CutoverV1V2})
}

// ScheduleByName returns a shipped schedule: "v2" or "v1-v2".
func ScheduleByName(name string) (Schedule, error) {
	switch name {
	case "v2":
		return ScheduleV2(), nil
	case "v1-v2":
		return ScheduleV1V2(), nil
	}
	return Schedule{}, fmt.Errorf("%w: unknown schedule %q (want v2 or v1-v2)", ErrInvalidLayout, name)
}

// Name is the schedule's name.
func (s Schedule) Name() string { return s.name }

// Periods returns a copy of the schedule's periods.
func (s Schedule) Periods() []Period { return append([]Period(nil), s.periods...) }

// Layout returns the layout with the given name, if the schedule uses it.
func (s Schedule) Layout(name string) (Layout, bool) {
	for _, p := range s.periods {
		if p.Layout.name == name {
			return p.Layout, true
		}
	}
	return Layout{}, false
}

// At returns the index of the period holding timestamp ts (ms after Epoch) and its layout.
func (s Schedule) At(ts int64) (int, Layout) {
	i := len(s.periods) - 1
	for i > 0 && ts < s.periods[i].Start {
		i--
	}
	return i, s.periods[i].Layout
}

// LayoutAt returns the layout in force at time t.
func (s Schedule) LayoutAt(t time.Time) Layout {
	_, l := s.At(t.UnixMilli() - EpochUnixMs)
	return l
}
