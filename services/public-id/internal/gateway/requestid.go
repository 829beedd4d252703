package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
)

// maxRequestID bounds a request ID taken from a trusted proxy.
const maxRequestID = 128

// requestID is the request's ID: the X-Request-Id a trusted proxy (TrustedProxies) sent, when it
// is one header of 1 to 128 of A-Z a-z 0-9 and - _ . : + = / (a UUID, hex, base64, the load
// balancer's trace ID); otherwise a fresh one, 16 random bytes in hex. A customer's own header,
// sent straight to the gateway, is never taken: it would let one write anything into the log.
// trusted tells whether the connection's peer is one of them.
func (g *Gateway) requestID(r *http.Request, trusted bool) string {
	if vs := r.Header["X-Request-Id"]; trusted && len(vs) == 1 && wellFormedRequestID(vs[0]) {
		return vs[0]
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
