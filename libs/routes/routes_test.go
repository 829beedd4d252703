package routes

import (
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
	} {
		_, err := Parse([]byte(tokenRoute(tt.field, tt.query)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s / %s: %v, want an error saying %q", tt.field, tt.query, err, tt.want)
		}
	}
}
