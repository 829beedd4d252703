package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkHandler: one request through the whole handler stack (request ID, caller, echo or
// Connect, quota, generator, metrics) without sockets, next to a bare handler writing a body of
// the same size; allocs/op is the figure to watch.
//
//	cd services/generator && go test -run '^$' -bench Handler -benchmem ./internal/server
func BenchmarkHandler(b *testing.B) {
	r := start(b, baseConfig(b))
	r.waitReady(b)
	h := r.srv.Handler()
	body := []byte(`{"id":"120460138153815040"}` + "\n")
	bare := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	for _, c := range []struct {
		name, path, ctype, body string
		h                       http.Handler
	}{
		{"bare", "/", "", "", bare},
		{"REST", "/v1/ids", "application/json", "{}", h},
		{"ConnectJSON", "/idgen.v1.IdService/Generate", "application/json", "{}", h},
		{"ConnectProto", "/idgen.v1.IdService/Generate", "application/proto", "", h},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(c.body))
				if c.ctype != "" {
					req.Header.Set("Content-Type", c.ctype)
				}
				w := httptest.NewRecorder()
				c.h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", c.name, w.Code, w.Body)
				}
			}
		})
	}
}
