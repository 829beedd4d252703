package gateway

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/go-redis/redis_rate/v10"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/realclientip/realclientip-go"
	"golang.org/x/time/rate"
)

// clientLimiter is the per-client rate limit: a token bucket per client (its address, or its API
// key) in a table of bounded size (about 20 MiB full at 65,536 clients). When the table is full
// the least recently seen client's bucket goes; a client that comes back after that starts with a
// full burst, which costs at most one burst per eviction, never memory. The table is the LRU's
// own, under its own lock.
//
// With a rate store (Options.RateRedis), the limit is the region's: every check goes to the
// store, and the table here serves only the checks the store failed (ratestore.go), at the same
// rate and burst, counted by this process alone.
type clientLimiter struct {
	buckets *lru.Cache[clientKey, *rate.Limiter]
	rate    rate.Limit
	burst   int
	store   *rateStore       // nil: in-process only
	scope   string           // the limit's part of its store keys: "gw", or "route:NAME"
	limit   redis_rate.Limit // rate and burst, as the store takes them
}

func newClientLimiter(perSecond float64, burst, size int) *clientLimiter {
	c, _ := lru.New[clientKey, *rate.Limiter](max(size, 1))
	return &clientLimiter{buckets: c, rate: rate.Limit(perSecond), burst: burst}
}

// shared puts l's limit in store under scope (nil: l stays in-process).
func (l *clientLimiter) shared(store *rateStore, scope string) *clientLimiter {
	if store != nil && l.rate > 0 {
		l.store, l.scope, l.limit = store, scope, redisLimit(float64(l.rate), l.burst)
	}
	return l
}

// allow takes one request of key's rate: from the store when l has one and it answers in time,
// else from the table here (take).
func (l *clientLimiter) allow(key clientKey, now time.Time) (bool, time.Duration) {
	if l.store != nil {
		if ok, wait, err := l.store.allow(l.scope, key, l.limit); err == nil {
			return ok, wait
		}
	}
	return l.take(key, now)
}

// take takes one token from key's bucket; when there is none, it says how long until there is.
func (l *clientLimiter) take(key clientKey, now time.Time) (bool, time.Duration) {
	if l.rate <= 0 {
		return true, 0
	}
	b, ok := l.buckets.Get(key)
	if !ok {
		// Added only if still missing, so concurrent first requests of a client share a bucket.
		b = rate.NewLimiter(l.rate, l.burst)
		if prev, found, _ := l.buckets.PeekOrAdd(key, b); found {
			b = prev
		}
	}
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

func (l *clientLimiter) len() int { return l.buckets.Len() }

// clientKey is whom a rate limit counts: a client's address (an IPv6 one by its /64), or, when
// the gateway reads an API key and the request carries one, the first 16 bytes of the key's
// SHA-256 (keyed set; the zero addr).
type clientKey struct {
	addr   netip.Addr
	apiKey [16]byte
	keyed  bool
}

// apiKeyKey is the key of a client known by its API key.
func apiKeyKey(key string) clientKey {
	sum := sha256.Sum256([]byte(key))
	return clientKey{apiKey: [16]byte(sum[:16]), keyed: true}
}

// addrKey is the key of a client known by its address.
func addrKey(a netip.Addr) clientKey {
	if a.Is6() {
		a = netip.PrefixFrom(a, 64).Masked().Addr()
	}
	return clientKey{addr: a}
}

// clientAddr finds the customer's address: the connection's peer, or, when the peer is a trusted
// proxy (the edge load balancer), the rightmost address of X-Forwarded-For that is not a trusted
// proxy. IPv6 clients are limited by their /64, which one subscriber usually holds whole.
type clientAddr struct {
	trusted []netip.Prefix
	xff     realclientip.Strategy
}

// ParseTrustedProxies parses a comma-separated list of CIDR ranges and addresses.
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: want an address or a CIDR range", s)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: want an address or a CIDR range", s)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func newClientAddr(trusted []netip.Prefix) (*clientAddr, error) {
	c := &clientAddr{trusted: trusted}
	if len(trusted) == 0 {
		return c, nil
	}
	var ranges []net.IPNet
	for _, p := range trusted {
		ranges = append(ranges, net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())})
	}
	s, err := realclientip.NewRightmostTrustedRangeStrategy("X-Forwarded-For", ranges)
	if err != nil {
		return nil, err
	}
	c.xff = s
	return c, nil
}

// addr is the client's address: the peer's, or X-Forwarded-For's behind a trusted proxy. The zero
// Addr when the peer's cannot be read (a request made without a connection).
func (c *clientAddr) addr(r *http.Request) netip.Addr {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	addr := peer.Addr().Unmap()
	if c.xff != nil && c.isTrusted(addr) {
		if s := c.xff.ClientIP(r.Header, r.RemoteAddr); s != "" {
			if a, err := netip.ParseAddr(s); err == nil {
				addr = a.Unmap().WithZone("")
			}
		}
	}
	return addr
}

// peerTrusted tells whether the connection's peer is a trusted proxy.
func (c *clientAddr) peerTrusted(r *http.Request) bool {
	if len(c.trusted) == 0 {
		return false
	}
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && c.isTrusted(peer.Addr().Unmap())
}

func (c *clientAddr) isTrusted(a netip.Addr) bool {
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
