package routes

import "testing"

func TestQueryValues(t *testing.T) {
	one, fifty := int64(1), int64(50)
	for _, tt := range []struct {
		typ       Type
		in, want  string
		wantError bool
	}{
		{Type{Type: "int", Min: &one, Max: &fifty}, "+0007", "7", false},
		{Type{Type: "int", Min: &one, Max: &fifty}, "51", "", true},
		{Type{Type: "number"}, "1.50", "1.5", false},
		{Type{Type: "number"}, "NaN", "", true},
		{Type{Type: "number"}, "-Inf", "", true},
		{Type{Type: "number"}, "0x1p62", "", true},
		{Type{Type: "number"}, "1_000", "", true},
		{Type{Type: "time"}, "2026-11-30T13:00:00+01:00", "2026-11-30T12:00:00Z", false},
		{Type{Type: "time"}, "../../admin?dump=1", "", true},
		{Type{Type: "bool"}, "yes", "", true},
		{Type{Type: "string", MaxLen: 3}, "abcd", "", true},
	} {
		got, err := tt.typ.QueryValue("p", tt.in)
		if (err != nil) != tt.wantError || got != tt.want {
			t.Errorf("%s %q: %q, %v; want %q (error %v)", tt.typ.Type, tt.in, got, err, tt.want, tt.wantError)
		}
	}
}
