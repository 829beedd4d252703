package idcore_test

import (
	"database/sql/driver"
	"encoding/json"
	"errors"
	"testing"

	"github.com/idgen/idgen/libs/idcore"
)

func TestParseID(t *testing.T) {
	tests := []struct {
		in   string
		want idcore.ID
		ok   bool
	}{
		{"0", 0, true},
		{"97301141913751557", 97301141913751557, true},
		{"9223372036854775807", 1<<63 - 1, true},
		{"9223372036854775808", 0, false},
		{"18446744073709551616", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"007", 0, false},
		{"", 0, false},
		{"abc", 0, false},
		{"12 ", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := idcore.ParseID(tt.in)
			if tt.ok != (err == nil) || got != tt.want {
				t.Fatalf("ParseID(%q) = %d, %v", tt.in, got, err)
			}
			if err != nil && !errors.Is(err, idcore.ErrInvalidID) {
				t.Fatalf("err %v is not ErrInvalidID", err)
			}
		})
	}
}

func TestJSON(t *testing.T) {
	type row struct {
		ID idcore.ID `json:"id"`
	}
	big := idcore.ID(683244571854022659) // above 2^53
	b, err := json.Marshal(row{big})
	if err != nil || string(b) != `{"id":"683244571854022659"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	// Through a float64, as JavaScript would read a number, the ID would change; as a string it survives.
	var generic map[string]any
	_ = json.Unmarshal(b, &generic)
	if s, ok := generic["id"].(string); !ok || s != big.String() {
		t.Fatalf("id did not survive as a string: %#v", generic["id"])
	}
	if idcore.ID(float64(big)) == big {
		t.Fatalf("test id %d is exact as a float64; pick one that is not", big)
	}
	for _, in := range []string{`{"id":"683244571854022659"}`, `{"id":683244571854022659}`} {
		var r row
		if err := json.Unmarshal([]byte(in), &r); err != nil || r.ID != big {
			t.Fatalf("Unmarshal(%s) = %d, %v", in, r.ID, err)
		}
	}
	for _, in := range []string{`{"id":"-5"}`, `{"id":-5}`, `{"id":1.5}`, `{"id":null}`, `{"id":"9223372036854775808"}`, `{"id":true}`} {
		var r row
		if err := json.Unmarshal([]byte(in), &r); err == nil {
			t.Errorf("Unmarshal(%s) accepted: %d", in, r.ID)
		}
	}
}

func TestSQL(t *testing.T) {
	id := idcore.ID(683244571854022659)
	v, err := id.Value()
	if err != nil || v != driver.Value(int64(683244571854022659)) {
		t.Fatalf("Value = %#v, %v", v, err)
	}
	for _, src := range []any{int64(683244571854022659), []byte("683244571854022659"), "683244571854022659"} {
		var got idcore.ID
		if err := got.Scan(src); err != nil || got != id {
			t.Fatalf("Scan(%#v) = %d, %v", src, got, err)
		}
	}
	for _, src := range []any{int64(-1), nil, 1.5, []byte("x")} {
		var got idcore.ID
		if err := got.Scan(src); !errors.Is(err, idcore.ErrInvalidID) {
			t.Errorf("Scan(%#v) err = %v", src, err)
		}
	}
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{"0", "97301141913751557", "9223372036854775807", "9223372036854775808", "-1", "007", "", "1e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := idcore.ParseID(s)
		if err != nil {
			return
		}
		if id < 0 || id.String() != s {
			t.Fatalf("ParseID(%q) = %d, which prints as %q", s, id, id.String())
		}
	})
}

func FuzzDecode(f *testing.F) {
	for _, v := range []int64{0, 97301141913751557, 683244571854022659, 1<<63 - 1} {
		f.Add(v)
	}
	scheds := []idcore.Schedule{idcore.ScheduleV2(), idcore.ScheduleV1V2()}
	f.Fuzz(func(t *testing.T, v int64) {
		for _, s := range scheds {
			d, err := s.Decode(idcore.ID(v))
			if v < 0 {
				if err == nil {
					t.Fatalf("Decode(%d) accepted a negative id", v)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			back, err := s.Compose(d.Parts)
			if err != nil || back != idcore.ID(v) {
				t.Fatalf("%s: Compose(Decode(%d)) = %d, %v", s.Name(), v, back, err)
			}
			if _, err := s.Explain(idcore.ID(v)); err != nil {
				t.Fatal(err)
			}
		}
	})
}
