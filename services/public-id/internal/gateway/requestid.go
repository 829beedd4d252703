package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
)

// maxRequestID bounds a request ID taken from a trusted proxy; maxTraceID a trace ID.
const (
	maxRequestID = 128
	maxTraceID   = 256
)

// NoRequestIDHeader, as Options.RequestIDHeader, makes the gateway take no request ID from any
// proxy: each is its own.
const NoRequestIDHeader = "-"

// requestID is the request's ID: the one a trusted proxy (TrustedProxies) sent in
// RequestIDHeader (X-Request-Id by default), when it is one header of 1 to 128 of A-Z a-z 0-9 and
// - _ . : + = / (a UUID, hex, base64); otherwise, or with NoRequestIDHeader, a fresh one, 16
// random bytes in hex. A customer's own header, sent straight to the gateway, is never taken: it
// would let one write anything into the log, and choose the ID the upstream gets. So the proxy
// must set the header itself, overwriting a customer's (nginx's proxy_set_header, envoy's own
// x-request-id do; an AWS ALB passes a customer's X-Request-Id on unchanged: behind one, take
// none). trusted tells whether the connection's peer is a trusted proxy.
func (g *Gateway) requestID(r *http.Request, trusted bool) string {
	if g.requestIDHeader != "" && trusted {
		if vs := r.Header[g.requestIDHeader]; len(vs) == 1 && wellFormedRequestID(vs[0]) {
			return vs[0]
		}
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

func wellFormedRequestID(s string) bool {
	if len(s) == 0 || len(s) > maxRequestID {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-' || c == '_' || c == '.' || c == ':' || c == '+' || c == '=' || c == '/':
		default:
			return false
		}
	}
	return true
}

// traceID is the AWS load balancer's X-Amzn-Trace-Id from a trusted proxy, for the access log
// ("Root=1-…;Self=1-…"), when it is one header of 1 to 256 of A-Z a-z 0-9 and - = ; . : _;
// "" otherwise. The load balancer keeps the Root a customer sent, so it correlates the log
// with the load balancer's, and proves nothing.
func traceID(r *http.Request, trusted bool) string {
	vs := r.Header["X-Amzn-Trace-Id"]
	if !trusted || len(vs) != 1 || len(vs[0]) == 0 || len(vs[0]) > maxTraceID {
		return ""
	}
	for i := 0; i < len(vs[0]); i++ {
		switch c := vs[0][i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-' || c == '=' || c == ';' || c == '.' || c == ':' || c == '_':
		default:
			return ""
		}
	}
	return vs[0]
}
