package routes

import (
	"math"
	"strings"
	"testing"
	"time"
)

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

// tokenRoute is a route file whose response declares next (a token: field) and whose query
// takes it back (query).
func tokenRoute(field, query string) string {
	return `{"routes": [{"name": "list", "public": "/customers/{public_id}/orders",
  "upstream": "http://orders.internal/internal/customers/{internal_id}/orders", "resource": "cus",
  "query": {` + query + `},
  "response": {"type": "object", "fields": {"orders": {"type": "array", "items": "id:ord"}, "next": ` + field + `}}}]}`
}

func TestTokenTypes(t *testing.T) {
	for _, tt := range []struct {
		field, query string
		ttl          time.Duration
		maxLen       int
	}{
		{`"token"`, `"cursor": "token"`, DefaultTokenTTL, 1024},
		{`{"type": "token"}`, `"cursor": {"type": "token"}`, DefaultTokenTTL, 1024},
		{`{"type": "token", "ttl": "15m", "max_len": 4096}`, `"cursor": "token"`, 15 * time.Minute, 4096},
		{`{"type": "token", "ttl": "1s"}`, ``, time.Second, 1024},
		{`{"type": "token", "ttl": "24h", "max_len": 8192}`, ``, 24 * time.Hour, 8192},
	} {
		c, err := Parse([]byte(tokenRoute(tt.field, tt.query)))
		if err != nil {
			t.Errorf("%s / %s: %v", tt.field, tt.query, err)
			continue
		}
		next := c.Routes[0].Response.Fields["next"]
		if next.Type != "token" || next.TokenTTL() != tt.ttl || next.MaxLen != tt.maxLen {
			t.Errorf("%s: type %s, ttl %v, max_len %d; want token, %v, %d", tt.field, next.Type, next.TokenTTL(), next.MaxLen, tt.ttl, tt.maxLen)
		}
	}
	// As many tokens as one response may give out: accepted.
	if _, err := Parse([]byte(tokenRoute(`{"type": "array", "max_items": 100, "items": "token"}`, `"cursor": "token"`))); err != nil {
		t.Errorf("a response of at most %d tokens: %v", MaxTokens, err)
	}
	for _, tt := range []struct{ field, query, want string }{
		{`{"type": "token", "ttl": "an hour"}`, ``, `ttl "an hour": want a duration`},
		{`{"type": "token", "ttl": "500ms"}`, ``, `ttl "500ms": want 1s to 24h0m0s`},
		{`{"type": "token", "ttl": "25h"}`, ``, `ttl "25h": want 1s to 24h0m0s`},
		{`{"type": "token", "ttl": "-1h"}`, ``, `want 1s to 24h0m0s`},
		{`{"type": "token", "max_len": 8193}`, ``, "max_len 8193: a token's is at most 8192"},
		{`{"type": "token", "max_len": -1}`, ``, "negative bound"},
		{`{"type": "token", "pattern": "[a-z]+"}`, ``, "pattern does not apply to type token"},
		{`{"type": "string", "ttl": "1h"}`, ``, "ttl does not apply to type string"},
		{`{"type": "token", "tll": "1h"}`, ``, `unknown field "tll"`},
		{`"token"`, `"cursor": {"type": "token", "ttl": "1h"}`, "ttl and max_len are a response token's"},
		{`"token"`, `"cursor": {"type": "token", "max_len": 64}`, "ttl and max_len are a response token's"},
		{`"string"`, `"cursor": "token"`, "redeemed only on the route that issued it"},
		// More tokens than one response may give out: each field times the max_items it is in.
		{`{"type": "array", "max_items": 101, "items": "token"}`, ``, "response: up to 101 tokens in one response (response.next[] 101), and the gateway gives out at most 100 in one"},
		{`{"type": "object", "fields": {"a": "token", "pages": {"type": "array", "max_items": 10, "items": {"type": "array", "max_items": 10, "items": {"type": "object", "fields": {"c": "token"}}}}}}`, ``,
			"up to 101 tokens in one response (response.next.a 1, response.next.pages[][].c 100)"},
		{`{"type": "array", "items": {"type": "array", "max_items": 1000000, "items": {"type": "array", "max_items": 1000000, "items": "token"}}}`, ``, "up to 1000000000 tokens"},
	} {
		_, err := Parse([]byte(tokenRoute(tt.field, tt.query)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s / %s: %v, want an error saying %q", tt.field, tt.query, err, tt.want)
		}
	}
}

// boundsRoute is a route file whose response object has the given fields.
func boundsRoute(fields string) string {
	return `{"routes": [{"name": "t", "public": "/t/{public_id}", "upstream": "http://up.internal/t/{internal_id}",
  "resource": "ord", "query": {"since": {"type": "time", "min": "2026-01-01T00:00:00Z", "max": "now"}},
  "response": {"type": "object", "fields": {` + fields + `}}}]}`
}

// TestDecimalsAndTimeBounds: a number's decimals and a time's min and max as a route file writes
// them, and the errors of bad ones.
func TestDecimalsAndTimeBounds(t *testing.T) {
	c, err := Parse([]byte(boundsRoute(`"price": {"type": "number", "min": 0, "max": 100, "decimals": 2},
		"whole": {"type": "number", "min": 0, "max": 1, "decimals": 0},
		"at": {"type": "time", "precision": "day", "min": "2026-01-01T01:00:00+01:00", "max": "now+24h"},
		"seen": {"type": "time", "min": "now-720h", "max": "now"}, "any": "time"`)))
	if err != nil {
		t.Fatal(err)
	}
	f := c.Routes[0].Response.Fields
	if d := f["price"].Decimals; d == nil || *d != 2 {
		t.Errorf("price decimals: %v", d)
	}
	if d := f["whole"].Decimals; d == nil || *d != 0 {
		t.Errorf("decimals 0 is declared, not absent: %v", d)
	}
	at := f["at"]
	if at.MinTime == nil || at.MinTime.Relative || !at.MinTime.At.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || at.MinTime.At.Location() != time.UTC {
		t.Errorf("at min: %+v", at.MinTime)
	}
	if at.MaxTime == nil || !at.MaxTime.Relative || at.MaxTime.Offset != 24*time.Hour || at.MaxTime.String() != "now+24h" {
		t.Errorf("at max: %+v", at.MaxTime)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	if lo, hi := f["seen"].TimeSpan(now); !lo.Equal(now.Add(-720*time.Hour)) || !hi.Equal(now) {
		t.Errorf("seen spans %v to %v", lo, hi)
	}
	if lo, hi := f["any"].TimeSpan(now); lo.Year() != 0 || hi.Year() != 9999 || hi.Month() != 12 {
		t.Errorf("an unbounded time spans %v to %v, want years 0000 to 9999", lo, hi)
	}
	for _, tt := range []struct {
		ts   time.Time
		want bool
	}{
		{now.Add(24 * time.Hour), true}, {now.Add(24*time.Hour + time.Nanosecond), false},
		{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), true}, {time.Date(2025, 12, 31, 23, 59, 59, 0, time.UTC), false},
	} {
		if got := at.InTimeBounds(tt.ts, now); got != tt.want {
			t.Errorf("at in bounds %v: %v, want %v", tt.ts, got, tt.want)
		}
	}
	if got := at.TimeBounds(); got != "2026-01-01T01:00:00+01:00–now+24h" {
		t.Errorf("TimeBounds: %q", got)
	}

	for _, tt := range []struct{ fields, want string }{
		{`"p": {"type": "number", "decimals": -1}`, `field "p": decimals -1: want 0 to 15`},
		{`"p": {"type": "number", "decimals": 16}`, "decimals 16: want 0 to 15"},
		{`"p": {"type": "number", "decimals": 1.5}`, "decimals"},
		{`"p": {"type": "number", "decimals": "2"}`, "decimals"},
		{`"p": {"type": "int", "min": 0, "max": 9, "decimals": 2}`, "decimals does not apply to type int"},
		{`"at": {"type": "time", "min": 0}`, `field "at": min 0: want an RFC 3339 time ("2026-01-01T00:00:00Z") or now, now+DURATION`},
		{`"at": {"type": "time", "max": "tomorrow"}`, `max "tomorrow": want an RFC 3339 time`},
		{`"at": {"type": "time", "max": "now+1d"}`, `max "now+1d": want`},
		{`"at": {"type": "time", "max": "now+"}`, `max "now+": want`},
		{`"at": {"type": "time", "max": "now+-1h"}`, `max "now+-1h": want`},
		{`"at": {"type": "time", "max": "now 1h"}`, `max "now 1h": want`},
		{`"at": {"type": "time", "min": "2026-01-01"}`, `min "2026-01-01": want`},
		{`"at": {"type": "time", "min": "2026-02-01T00:00:00Z", "max": "2026-01-01T00:00:00Z"}`, "min 2026-02-01T00:00:00Z is after max 2026-01-01T00:00:00Z"},
		{`"at": {"type": "time", "min": "now+1h", "max": "now"}`, "min now+1h is after max now"},
		{`"s": {"type": "string", "min": "now"}`, "min: want a number"},
	} {
		_, err := Parse([]byte(boundsRoute(tt.fields)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want one saying %q", tt.fields, err, tt.want)
		}
	}
}

func TestDecimals(t *testing.T) {
	two, zero := 2, 0
	for _, tt := range []struct {
		decimals *int
		f        float64
		want     bool
	}{
		{&two, 0.07, true}, {&two, 19.99, true}, {&two, 1.5, true}, {&two, 1e6, true},
		{&two, 0.005, false}, {&two, 1e-7, false}, {&two, 0.30000000000000004, false},
		{&zero, 3, true}, {&zero, 0.5, false}, {nil, 0.123456789, true},
	} {
		typ := Type{Type: "number", Decimals: tt.decimals}
		if got := typ.InDecimals(tt.f); got != tt.want {
			t.Errorf("%v in decimals %d: %v, want %v", tt.f, derefOr(tt.decimals), got, tt.want)
		}
	}
	for f, want := range map[float64]string{1.50: "1.5", 1e-7: "0.0000001", math.Copysign(0, -1): "0", 1e6: "1000000", -0.25: "-0.25"} {
		if got := string(AppendNumber(nil, f)); got != want {
			t.Errorf("AppendNumber(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestQueryValueBounds(t *testing.T) {
	c, err := Parse([]byte(boundsRoute(`"x": "bool"`)))
	if err != nil {
		t.Fatal(err)
	}
	since := c.Routes[0].Query["since"]
	if got, err := since.QueryValue("since", "2026-06-01T00:00:00+02:00"); err != nil || got != "2026-05-31T22:00:00Z" {
		t.Errorf("since in bounds: %q, %v", got, err)
	}
	for _, v := range []string{"2025-12-31T23:59:59Z", time.Now().Add(time.Hour).Format(time.RFC3339)} {
		if _, err := since.QueryValue("since", v); err == nil || err.Error() != "query parameter since: want a time in 2026-01-01T00:00:00Z–now" {
			t.Errorf("since %s: %v", v, err)
		}
	}
	two := 2
	price := Type{Type: "number", Decimals: &two}
	if got, err := price.QueryValue("price", "19.90"); err != nil || got != "19.9" {
		t.Errorf("price 19.90: %q, %v", got, err)
	}
	if _, err := price.QueryValue("price", "19.999"); err == nil || err.Error() != "query parameter price: want at most 2 decimals" {
		t.Errorf("price 19.999: %v", err)
	}
}

func derefOr(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
