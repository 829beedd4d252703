package serve_test

import (
	"bytes"
	"encoding/json"
	"log"
	"log/slog"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/svc/serve"
)

func TestRedact(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http: Accept error: too many open files; retrying in 5ms", "http: Accept error: too many open files; retrying in 5ms"},
		{`Unsolicited response received on idle HTTP channel starting with "{\"id\":\"121581128910022656\"}"; err=<nil>`,
			"Unsolicited response received on idle HTTP channel starting with [redacted]"},
		// Unquoted bytes after "starting with" go too.
		{"Unsolicited response received on idle HTTP channel starting with 121581128910022656", "Unsolicited response received on idle HTTP channel starting with [redacted]"},
		{`Get "http://orders.internal/internal/orders/121581128910022656": dial tcp 10.0.0.7:80: connect: connection refused`,
			"Get [redacted]: dial tcp 10.0.0.7:80: connect: connection refused"},
		{`net/http: HTTP/1.x transport connection broken: malformed HTTP response "121581128910022656 \"x\\\" y"`,
			"net/http: HTTP/1.x transport connection broken: malformed HTTP response [redacted]"},
		{"two `raw 12345678` and \"q\" strings", "two [redacted] and [redacted] strings"},
		{`unterminated "121581128910022656 to the end`, "unterminated [redacted]"},
		{`an escape at the end "\`, "an escape at the end [redacted]"},
	} {
		if got := serve.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%s)\n = %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

// TestRedactingWriter: a standard library logger writing through it gives one slog record a
// message, at the level, with the quoted bytes gone.
func TestRedactingWriter(t *testing.T) {
	var buf bytes.Buffer
	l := log.New(serve.RedactingWriter(slog.New(slog.NewJSONHandler(&buf, nil)).With("service", "x"), slog.LevelWarn), "", 0)
	l.Printf("Unsolicited response received on idle HTTP channel starting with %q; err=%v", []byte(`{"id":"121581128910022656","m":"MARKER"}`), nil)
	l.Printf("http: TLS handshake error from %s: %v", "192.0.2.1:5000", "EOF")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d records, want 2:\n%s", len(lines), buf.String())
	}
	for _, s := range []string{"121581128910022656", "MARKER"} {
		if strings.Contains(buf.String(), s) {
			t.Errorf("the log holds %s:\n%s", s, buf.String())
		}
	}
	var rec struct{ Level, Msg, Service string }
	if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil || rec.Level != "WARN" || rec.Service != "x" ||
		rec.Msg != "http: TLS handshake error from 192.0.2.1:5000: EOF" {
		t.Errorf("record %s (%v)", lines[1], err)
	}
}
