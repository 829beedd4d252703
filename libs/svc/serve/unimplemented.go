package serve

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// Unimplemented answers a call to a procedure the service does not have the way its protocol
// says to: gRPC and gRPC-Web get status UNIMPLEMENTED (12) in a trailers-only response, Connect
// gets HTTP 404 with {"code": "unimplemented"}. A plain HTTP 404 would reach a gRPC client as an
// opaque transport error.
var Unimplemented http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	msg := "unknown procedure " + r.URL.Path
	ct := r.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/grpc") {
		h := w.Header()
		h.Set("Content-Type", ct)
		h.Set("Grpc-Status", "12")
		h.Set("Grpc-Message", url.PathEscape(msg))
		w.WriteHeader(http.StatusOK)
		return
	}
	b, _ := json.Marshal(map[string]string{"code": "unimplemented", "message": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write(b)
})

// RPCOr sends requests that are RPCs (a gRPC or Connect content type, or a POST to a
// /package.Service/Method path) to Unimplemented, and the rest to next: a service's catch-all.
func RPCOr(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isRPC(r) {
			Unimplemented.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isRPC(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/grpc") || strings.HasPrefix(ct, "application/connect+") {
		return true
	}
	if r.Method != http.MethodPost && r.Header.Get("Connect-Protocol-Version") == "" {
		return false
	}
	// /package.Service/Method: a dotted service name and a method, nothing more.
	svc, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	return ok && strings.Contains(svc, ".") && method != "" && !strings.ContainsAny(method, "/:")
}

// Mount puts a Connect service handler on mux by each of its procedures' exact paths, and
// Unimplemented on the service's prefix, so a procedure the service lacks gets UNIMPLEMENTED.
func Mount(mux *http.ServeMux, prefix string, h http.Handler, procedures ...string) {
	mux.Handle(prefix, Unimplemented)
	for _, p := range procedures {
		mux.Handle(p, h)
	}
}
