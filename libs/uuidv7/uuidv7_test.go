package uuidv7_test

import (
	"database/sql/driver"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofrs/uuid/v5"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/uuidv7"
)

// RFC 9562 Appendix A.6: 2022-02-22T19:22:22Z (Tuesday, 2:22:22 PM GMT-05:00).
const rfcV7 = "017F22E2-79B0-7CC3-98C4-DC0C0C07398F"

// RFC 9562 Appendix B.1: a time-based UUIDv8.
const rfcV8 = "2489E9AD-2EE2-8E00-8EC9-32D5F69181C0"

func TestRFCVectors(t *testing.T) {
	u, err := uuidv7.ParseV7(rfcV7)
	if err != nil {
		t.Fatal(err)
	}
	if u.String() != "017f22e2-79b0-7cc3-98c4-dc0c0c07398f" {
		t.Fatalf("format = %s", u)
	}
	tm, err := uuidv7.Time(u)
	if err != nil || !tm.Equal(time.Date(2022, 2, 22, 19, 22, 22, 0, time.UTC)) {
		t.Fatalf("Time = %v, %v", tm, err)
	}
	v8, err := uuidv7.Parse(rfcV8)
	if err != nil || v8.Version() != 8 || v8.Variant() != uuid.VariantRFC9562 {
		t.Fatalf("B.1: %v version %d, %v", v8, v8.Version(), err)
	}
	if _, err := uuidv7.ParseV7(rfcV8); !errors.Is(err, uuidv7.ErrVersion) {
		t.Fatalf("ParseV7 of a v8: %v", err)
	}
	// Our v8 layout has the B.1 shape: version nibble at bits 48–51, variant at 64–65.
	ours, _ := uuidv7.FromID(683244571854022659)
	if ours.Version() != 8 || ours.Variant() != uuid.VariantRFC9562 {
		t.Fatalf("v8 from an id: %s", ours)
	}
	if _, err := uuidv7.ToID(v8); !errors.Is(err, uuidv7.ErrNotID) {
		t.Fatalf("ToID of another v8 format: %v", err)
	}
}

func TestParseStrict(t *testing.T) {
	for _, s := range []string{
		"", "017f22e2-79b0-7cc3-98c4-dc0c0c07398", "{017f22e2-79b0-7cc3-98c4-dc0c0c07398f}",
		"017f22e279b07cc398c4dc0c0c07398f", "urn:uuid:017f22e2-79b0-7cc3-98c4-dc0c0c07398f",
		"017f22e2-79b0-7cc3-98c4-dc0c0c07398g", "017f22e2+79b0-7cc3-98c4-dc0c0c07398f",
	} {
		if _, err := uuidv7.Parse(s); !errors.Is(err, uuidv7.ErrFormat) {
			t.Errorf("Parse(%q) = %v, want ErrFormat", s, err)
		}
	}
	if _, err := uuidv7.ParseV7("017f22e2-79b0-7cc3-18c4-dc0c0c07398f"); !errors.Is(err, uuidv7.ErrVariant) {
		t.Errorf("wrong variant accepted: %v", err)
	}
}

func TestConcurrentUniqueAndIncreasing(t *testing.T) {
	const workers = 8
	per := 10_000_000 / workers
	if raceEnabled {
		per /= 10 // the race detector makes each UUID ~20× dearer; the property is the same
	}
	g := uuidv7.NewGenerator(uuidv7.Settings{})
	out := make([][]uuid.UUID, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			us := make([]uuid.UUID, per)
			for i := range us {
				u, err := g.New()
				if err != nil {
					t.Error(err)
					return
				}
				us[i] = u
			}
			out[w] = us
		})
	}
	wg.Wait()
	var all []uuid.UUID
	for w, us := range out {
		for i := 1; i < len(us); i++ {
			if uuidv7.Compare(us[i], us[i-1]) <= 0 {
				t.Fatalf("worker %d: %s after %s", w, us[i], us[i-1])
			}
		}
		all = append(all, us...)
	}
	slices.SortFunc(all, uuidv7.Compare)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Fatalf("duplicate %s", all[i])
		}
	}
	t.Logf("checked %d UUIDs from %d goroutines: 0 duplicates", len(all), workers)
}

func TestBurstInOneMillisecond(t *testing.T) {
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	g := uuidv7.NewGenerator(uuidv7.Settings{Now: func() time.Time { return at }})
	prev, _ := g.New()
	for i := range 10_000 { // more than rand_a's 4,096 steps
		u, err := g.New()
		if err != nil {
			t.Fatal(err)
		}
		if uuidv7.Compare(u, prev) <= 0 {
			t.Fatalf("UUID %d: %s not above %s", i, u, prev)
		}
		if u.Version() != 7 || u.Variant() != uuid.VariantRFC9562 {
			t.Fatalf("version/variant of %s", u)
		}
		prev = u
	}
	// The carry ran the timestamp 2 ms ahead of the frozen clock (10,001 / 4,096), never back.
	tm, _ := uuidv7.Time(prev)
	if d := tm.Sub(at); d != 2*time.Millisecond {
		t.Fatalf("after the burst the timestamp is %v ahead", d)
	}
}

func TestClockStepBack(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	g := uuidv7.NewGenerator(uuidv7.Settings{Now: func() time.Time { return time.Unix(0, now.Load()) }})
	var prev uuid.UUID
	for i := range 3000 {
		if i == 1000 {
			now.Add(int64(-time.Second))
		}
		now.Add(int64(time.Microsecond))
		u, _ := g.New()
		if uuidv7.Compare(u, prev) <= 0 {
			t.Fatalf("UUID %d after a 1 s step back: %s not above %s", i, u, prev)
		}
		prev = u
	}
}

func TestSQLAndJSON(t *testing.T) {
	u := uuidv7.Must()
	v, err := u.Value()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.(string); !ok {
		t.Fatalf("Value is %T, want the canonical string", v)
	}
	var back uuid.UUID
	if err := back.Scan(v); err != nil || back != u {
		t.Fatalf("SQL round trip: %v %v", back, err)
	}
	var _ driver.Valuer = u
	b, _ := json.Marshal(map[string]uuid.UUID{"id": u})
	var m map[string]uuid.UUID
	if err := json.Unmarshal(b, &m); err != nil || m["id"] != u {
		t.Fatalf("JSON round trip %s: %v", b, err)
	}
}

func TestV8RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range []idcore.Schedule{idcore.ScheduleV2(), idcore.ScheduleV1V2()} {
		ids := make([]int64, 0, 100_002)
		for range 100_000 {
			ts := r.Int64N(idcore.MaxTimestamp + 1)
			_, l := s.At(ts)
			p := idcore.Parts{Timestamp: ts, Machine: r.IntN(l.MaxMachine() + 1), Sequence: r.IntN(l.MaxSequence() + 1)}
			if l.HasRegion() {
				p.Region = r.IntN(l.MaxRegion() + 1)
			}
			id, _ := s.Compose(p)
			ids = append(ids, int64(id))
		}
		ids = append(ids, 0, 1<<63-1)
		slices.Sort(ids)
		var prevU uuid.UUID
		for i, id := range ids {
			u, err := uuidv7.FromID(id)
			if err != nil {
				t.Fatal(err)
			}
			got, err := uuidv7.ToID(u)
			if err != nil || got != id {
				t.Fatalf("ToID(FromID(%d)) = %d, %v", id, got, err)
			}
			if i > 0 && id > ids[i-1] && uuidv7.Compare(u, prevU) <= 0 {
				t.Fatalf("v8 of %d does not sort above v8 of %d", id, ids[i-1])
			}
			prevU = u
		}
	}
	if _, err := uuidv7.FromID(-1); err == nil {
		t.Fatal("negative id accepted")
	}
}

func FuzzV8(f *testing.F) {
	f.Add(int64(683244571854022659), []byte("0123456789abcdef"))
	f.Fuzz(func(t *testing.T, id int64, raw []byte) {
		if id >= 0 {
			u, err := uuidv7.FromID(id)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := uuidv7.ToID(u); err != nil || got != id {
				t.Fatalf("round trip of %d: %d, %v", id, got, err)
			}
		}
		if len(raw) == 16 {
			u := uuid.FromBytesOrNil(raw)
			if got, err := uuidv7.ToID(u); err == nil {
				back, _ := uuidv7.FromID(got)
				if back != u {
					t.Fatalf("ToID accepted %s, which FromID(%d) does not give back (%s)", u, got, back)
				}
			}
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add(rfcV7)
	f.Add(rfcV8)
	f.Fuzz(func(t *testing.T, s string) {
		u, err := uuidv7.Parse(s)
		if err != nil {
			return
		}
		if len(s) != 36 {
			t.Fatalf("accepted %q", s)
		}
		again, err := uuidv7.Parse(u.String())
		if err != nil || again != u {
			t.Fatalf("canonical form of %q does not parse back", s)
		}
	})
}
