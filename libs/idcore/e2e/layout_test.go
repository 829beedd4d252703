package idcore_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

func ms(t *testing.T, s string) int64 {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMilli() - idcore.EpochUnixMs
}

func TestSpecVectors(t *testing.T) {
	sched := idcore.ScheduleV1V2()
	tests := []struct {
		name   string
		at     string
		parts  idcore.Parts
		want   idcore.ID
		layout string
	}{
		{"v1", "2026-09-26T12:00:00.000Z", idcore.Parts{Machine: 37, Sequence: 5}, 97301141913751557, "v1"},
		{"v2", "2031-03-01T09:30:00.000Z", idcore.Parts{Region: 2, Machine: 170, Sequence: 3}, 683244571854022659, "v2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.parts
			p.Timestamp = ms(t, tt.at)
			got, err := sched.Compose(p)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Compose = %d, want %d", got, tt.want)
			}
			d, err := sched.Decode(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if d.Parts != p || d.Layout != tt.layout || d.Time.Format(time.RFC3339Nano) != tt.at[:19]+"Z" {
				t.Fatalf("Decode = %+v, want parts %+v layout %s time %s", d, p, tt.layout, tt.at)
			}
			if d.HasRegion != (tt.layout == "v2") {
				t.Fatalf("HasRegion = %v", d.HasRegion)
			}
		})
	}
}

func TestRoundTripRandomFields(t *testing.T) {
	v3 := idcore.MustLayout("v3", idcore.Field{Kind: idcore.FieldRegion, Bits: 4},
		idcore.Field{Kind: idcore.FieldMachine, Bits: 8}, idcore.Field{Kind: idcore.FieldSequence, Bits: 10})
	schedules := []idcore.Schedule{
		idcore.ScheduleV2(),
		idcore.ScheduleV1V2(),
		idcore.MustSchedule("v1-v2-v3", idcore.Period{Layout: idcore.V1()},
			idcore.Period{Layout: idcore.V2(), Start: idcore.CutoverV1V2},
			idcore.Period{Layout: v3, Start: idcore.CutoverV1V2 * 2}),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range schedules {
		t.Run(s.Name(), func(t *testing.T) {
			for range 100000 {
				ts := r.Int64N(idcore.MaxTimestamp + 1)
				_, l := s.At(ts)
				p := idcore.Parts{Timestamp: ts, Machine: r.IntN(l.MaxMachine() + 1), Sequence: r.IntN(l.MaxSequence() + 1)}
				if l.HasRegion() {
					p.Region = r.IntN(l.MaxRegion() + 1)
				}
				id, err := s.Compose(p)
				if err != nil {
					t.Fatal(err)
				}
				if id < 0 {
					t.Fatalf("negative id %d for %+v", id, p)
				}
				d, err := s.Decode(id)
				if err != nil || d.Parts != p || d.Layout != l.Name() {
					t.Fatalf("Decode(Compose(%+v)) = %+v, %v", p, d, err)
				}
			}
		})
	}
}

// A third layout is one new entry: 41 + 4 region + 8 machine + 10 sequence, cut over from v2.
func TestThirdLayoutIsData(t *testing.T) {
	v3 := idcore.MustLayout("v3", idcore.Field{Kind: idcore.FieldRegion, Bits: 4},
		idcore.Field{Kind: idcore.FieldMachine, Bits: 8}, idcore.Field{Kind: idcore.FieldSequence, Bits: 10})
	cut := ms(t, "2040-01-01T00:00:00Z")
	s := idcore.MustSchedule("v2-v3", idcore.Period{Layout: idcore.V2()}, idcore.Period{Layout: v3, Start: cut})
	if v3.MaxRegion() != 15 || v3.MaxMachine() != 255 || v3.MaxSequence() != 1023 {
		t.Fatalf("v3 limits %d %d %d", v3.MaxRegion(), v3.MaxMachine(), v3.MaxSequence())
	}
	before, _ := s.Compose(idcore.Parts{Timestamp: cut - 1, Region: 7, Machine: 511, Sequence: 1023})
	after, err := s.Compose(idcore.Parts{Timestamp: cut, Region: 12, Machine: 3, Sequence: 0})
	if err != nil {
		t.Fatal(err)
	}
	if !(after > before) {
		t.Fatalf("IDs do not increase across the cutover: %d then %d", before, after)
	}
	d, _ := s.Decode(after)
	if d.Layout != "v3" || d.Region != 12 || d.Machine != 3 {
		t.Fatalf("decode after cutover: %+v", d)
	}
	if _, err := s.Compose(idcore.Parts{Timestamp: cut - 1, Region: 12}); !errors.Is(err, idcore.ErrInvalidField) {
		t.Fatalf("region 12 before the v3 cutover: err = %v, want ErrInvalidField", err)
	}
}

func TestCutoverInstant(t *testing.T) {
	s := idcore.ScheduleV1V2()
	if got := ms(t, "2028-01-01T00:00:00Z"); got != idcore.CutoverV1V2 {
		t.Fatalf("cutover = %d ms after the epoch, want %d", got, idcore.CutoverV1V2)
	}
	for _, tt := range []struct {
		ts   int64
		want string
	}{{idcore.CutoverV1V2 - 1, "v1"}, {idcore.CutoverV1V2, "v2"}, {0, "v1"}, {idcore.MaxTimestamp, "v2"}} {
		if _, l := s.At(tt.ts); l.Name() != tt.want {
			t.Errorf("At(%d) = %s, want %s", tt.ts, l.Name(), tt.want)
		}
	}
}

func TestTimestampEnd(t *testing.T) {
	end := idcore.Epoch.Add(time.Duration(idcore.MaxTimestamp) * time.Millisecond)
	if got := end.Format(time.RFC3339Nano); got != "2095-09-07T15:47:35.551Z" {
		t.Fatalf("last timestamp = %s", got)
	}
	s := idcore.ScheduleV2()
	id, err := s.Compose(idcore.Parts{Timestamp: idcore.MaxTimestamp, Region: 7, Machine: 511, Sequence: 1023})
	if err != nil || id != idcore.ID(1<<63-1) {
		t.Fatalf("largest id = %d, %v", id, err)
	}
	if _, err := s.Compose(idcore.Parts{Timestamp: idcore.MaxTimestamp + 1}); !errors.Is(err, idcore.ErrInvalidField) {
		t.Fatalf("past the end: %v", err)
	}
}

func TestInvalidLayouts(t *testing.T) {
	F := func(k idcore.FieldKind, b uint) idcore.Field { return idcore.Field{Kind: k, Bits: b} }
	tests := []struct {
		name   string
		fields []idcore.Field
	}{
		{"too few bits", []idcore.Field{F(idcore.FieldMachine, 10), F(idcore.FieldSequence, 11)}},
		{"too many bits", []idcore.Field{F(idcore.FieldMachine, 11), F(idcore.FieldSequence, 12)}},
		{"no machine", []idcore.Field{F(idcore.FieldRegion, 10), F(idcore.FieldSequence, 12)}},
		{"sequence not last", []idcore.Field{F(idcore.FieldSequence, 12), F(idcore.FieldMachine, 10)}},
		{"duplicate", []idcore.Field{F(idcore.FieldMachine, 5), F(idcore.FieldMachine, 5), F(idcore.FieldSequence, 12)}},
		{"zero width", []idcore.Field{F(idcore.FieldRegion, 0), F(idcore.FieldMachine, 10), F(idcore.FieldSequence, 12)}},
		{"unknown kind", []idcore.Field{F(9, 10), F(idcore.FieldSequence, 12)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := idcore.NewLayout("x", tt.fields...); !errors.Is(err, idcore.ErrInvalidLayout) {
				t.Fatalf("err = %v, want ErrInvalidLayout", err)
			}
		})
	}
	if _, err := idcore.NewSchedule("late", idcore.Period{Layout: idcore.V2(), Start: 5}); !errors.Is(err, idcore.ErrInvalidLayout) {
		t.Fatalf("schedule not starting at the epoch: %v", err)
	}
	if _, err := idcore.NewSchedule("dup", idcore.Period{Layout: idcore.V1()}, idcore.Period{Layout: idcore.V1(), Start: 9}); !errors.Is(err, idcore.ErrInvalidLayout) {
		t.Fatalf("schedule with a layout twice: %v", err)
	}
	if _, err := idcore.ScheduleByName("v3"); !errors.Is(err, idcore.ErrInvalidLayout) {
		t.Fatalf("unknown schedule: %v", err)
	}
}

func TestComposeRejectsOutOfRange(t *testing.T) {
	s := idcore.ScheduleV2()
	for _, p := range []idcore.Parts{{Region: 8}, {Machine: 512}, {Sequence: 1024}, {Machine: -1}, {Timestamp: -1}} {
		if _, err := s.Compose(p); !errors.Is(err, idcore.ErrInvalidField) {
			t.Errorf("Compose(%+v) err = %v, want ErrInvalidField", p, err)
		}
	}
	if _, err := idcore.ScheduleV1V2().Compose(idcore.Parts{Region: 1}); !errors.Is(err, idcore.ErrInvalidField) {
		t.Errorf("region in a v1 period: %v", err)
	}
}

func TestExplain(t *testing.T) {
	out, err := idcore.ScheduleV1V2().Explain(97301141913751557)
	if err != nil {
		t.Fatal(err)
	}
	want := `id 97301141913751557  layout v1  schedule v1-v2
bits 0 | 00000010101100110101110110111111000000000 | 0000100101 | 000000000101
field      bits    value
sign       63      0
timestamp  62-22   23198400000 ms after 2026-01-01 = 2026-09-26T12:00:00.000Z
machine    21-12   37
sequence   11-0    5
`
	if out != want {
		t.Fatalf("Explain:\n%s\nwant:\n%s", out, want)
	}
	out, _ = idcore.ScheduleV1V2().Explain(683244571854022659)
	for _, line := range []string{"region     21-19   2", "machine    18-10   170", "sequence   9-0     3", "2031-03-01T09:30:00.000Z"} {
		if !strings.Contains(out, line) {
			t.Errorf("v2 Explain lacks %q:\n%s", line, out)
		}
	}
}
