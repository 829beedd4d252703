package gateway

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/realclientip/realclientip-go"
	"golang.org/x/time/rate"
)

// clientLimiter is the per-client rate limit: a token bucket per client address in a table of
// bounded size. When the table is full the least recently seen client's bucket goes; a client
// that comes back after that starts with a full burst, which costs at most one burst per
// eviction, never memory.
type clientLimiter struct {
	mu      sync.Mutex
	buckets *lru.Cache[netip.Addr, *rate.Limiter]
	rate    rate.Limit
	burst   int
}

func newClientLimiter(perSecond float64, burst, size int) *clientLimiter {
	c, _ := lru.New[netip.Addr, *rate.Limiter](max(size, 1))
	return &clientLimiter{buckets: c, rate: rate.Limit(perSecond), burst: burst}
}

// take takes one token from key's bucket; when there is none, it says how long until there is.
func (l *clientLimiter) take(key netip.Addr, now time.Time) (bool, time.Duration) {
	if l.rate <= 0 {
		return true, 0
	}
	l.mu.Lock()
	b, ok := l.buckets.Get(key)
	if !ok {
		b = rate.NewLimiter(l.rate, l.burst)
		l.buckets.Add(key, b)
	}
	l.mu.Unlock()
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

func (l *clientLimiter) len() int { return l.buckets.Len() }

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

func (c *clientAddr) key(r *http.Request) netip.Addr {
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
	if addr.Is6() {
		addr = netip.PrefixFrom(addr, 64).Masked().Addr()
	}
	return addr
}

func (c *clientAddr) isTrusted(a netip.Addr) bool {
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
