// Package fakenlb is a stand-in, for the local stack's tools (the game day) and the tests, for
// an AWS Network Load Balancer in front of one target group.
package fakenlb

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// NLB is a fake of an AWS Network Load Balancer in front of one target group:
// there is no NLB here, so it does what the tests rely on an NLB doing, and nothing more.
//
//   - It listens on a loopback port and passes each client connection, byte for byte, to one
//     target (TCP passthrough): a flow stays on the target it was given for its life, so a
//     client's keep-alive connection is a connection to that target, and what the target says
//     (Connection: close, a GOAWAY, a FIN, a reset) reaches the client as it was sent.
//   - A target is registered in the initial state and gets new connections only once healthy.
//     Every Interval its health URL is fetched on a new connection (GET within Timeout): a 200 is
//     a pass, anything else (a 503, a refused connection, a timeout) a failure. HealthyThreshold
//     passes in a row make it healthy, UnhealthyThreshold failures in a row unhealthy.
//   - New connections go round robin to the healthy targets. With none healthy the connection is
//     closed at once (an NLB would fail open to every target; the tests keep one healthy).
//   - An unhealthy or deregistered target gets no new connections; the ones it has go on until
//     either side closes them: the target group's connection termination for unhealthy targets
//     and on deregistration both off (TerminateUnhealthy: on for unhealthy targets, as an NLB's
//     default is, resetting their connections when they turn unhealthy).
//   - A connection to a target that refuses it (its listener closed) is reset, as the client of
//     an NLB sees it.
type NLB struct {
	cfg Config
	l   net.Listener
	t0  time.Time

	mu      sync.Mutex
	targets []*nlbTarget
	next    int
	events  []string

	noTarget   atomic.Int64
	dialFailed atomic.Int64
	stop       chan struct{}
	wg         sync.WaitGroup
}

// Config is a NLB's target group settings (the fleet's: 10 s, 3 and 3; tests use less).
type Config struct {
	Interval           time.Duration // between health checks of a target; default 100 ms
	Timeout            time.Duration // of one health check; default Interval
	HealthyThreshold   int           // default 3
	UnhealthyThreshold int           // default 3
	TerminateUnhealthy bool          // reset a target's connections when it turns unhealthy
}

type nlbTarget struct {
	name, addr, health string
	state              string // initial, healthy, unhealthy, deregistered
	passes, fails      int
	flows              int64
	conns              map[net.Conn]struct{}
	stop               chan struct{}
}

// New starts a fake NLB with no targets on a loopback port, until Close.
func New(cfg Config) (*NLB, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = 100 * time.Millisecond
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = cfg.Interval
	}
	if cfg.HealthyThreshold <= 0 {
		cfg.HealthyThreshold = 3
	}
	if cfg.UnhealthyThreshold <= 0 {
		cfg.UnhealthyThreshold = 3
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	lb := &NLB{cfg: cfg, l: l, t0: time.Now(), stop: make(chan struct{})}
	lb.wg.Go(lb.accept)
	return lb, nil
}

// Addr is the load balancer's host:port; URL its http:// URL.
func (lb *NLB) Addr() string { return lb.l.Addr().String() }

// URL is the load balancer's base URL (plaintext HTTP).
func (lb *NLB) URL() string { return "http://" + lb.Addr() }

// Register adds a target: addr gets the traffic, healthURL the health checks (GET).
func (lb *NLB) Register(name, addr, healthURL string) {
	tg := &nlbTarget{name: name, addr: addr, health: healthURL, state: "initial", conns: map[net.Conn]struct{}{}, stop: make(chan struct{})}
	lb.mu.Lock()
	lb.targets = append(lb.targets, tg)
	lb.eventLocked(name + " registered")
	lb.mu.Unlock()
	lb.wg.Go(func() { lb.check(tg) })
}

// Deregister stops new connections to the target and its health checks; its connections stay.
func (lb *NLB) Deregister(name string) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	for _, tg := range lb.targets {
		if tg.name == name && tg.state != "deregistered" {
			tg.state = "deregistered"
			close(tg.stop)
			lb.eventLocked(name + " deregistered")
		}
	}
}

// State returns the target's state: initial, healthy, unhealthy or deregistered ("" unknown).
func (lb *NLB) State(name string) string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	for _, tg := range lb.targets {
		if tg.name == name {
			return tg.state
		}
	}
	return ""
}

// NLBStats is what a NLB counted.
type NLBStats struct {
	NoTarget   int64            // client connections closed for want of a healthy target
	DialFailed int64            // client connections reset because their target refused
	Flows      map[string]int64 // connections passed to each target
}

// Stats returns the counts so far.
func (lb *NLB) Stats() NLBStats {
	s := NLBStats{NoTarget: lb.noTarget.Load(), DialFailed: lb.dialFailed.Load(), Flows: map[string]int64{}}
	lb.mu.Lock()
	defer lb.mu.Unlock()
	for _, tg := range lb.targets {
		s.Flows[tg.name] = tg.flows
	}
	return s
}

// Events returns the targets' state changes, each with its time since the start.
func (lb *NLB) Events() []string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return append([]string(nil), lb.events...)
}

func (lb *NLB) eventLocked(what string) {
	lb.events = append(lb.events, fmt.Sprintf("%7.3fs %s", time.Since(lb.t0).Seconds(), what))
}

// Close stops the balancer: its listener, health checks and connections.
func (lb *NLB) Close() {
	close(lb.stop)
	lb.l.Close()
	lb.mu.Lock()
	for _, tg := range lb.targets {
		if tg.state != "deregistered" {
			close(tg.stop)
			tg.state = "deregistered"
		}
		for c := range tg.conns {
			c.Close()
		}
	}
	lb.mu.Unlock()
	lb.wg.Wait()
}

// check health-checks tg every Interval until it is deregistered or the balancer closes.
func (lb *NLB) check(tg *nlbTarget) {
	hc := &http.Client{Timeout: lb.cfg.Timeout, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	t := time.NewTicker(lb.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-tg.stop:
			return
		case <-lb.stop:
			return
		case <-t.C:
		}
		ok := false
		if resp, err := hc.Get(tg.health); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			ok = resp.StatusCode == http.StatusOK
		}
		var reset []net.Conn
		lb.mu.Lock()
		if tg.state == "deregistered" {
			lb.mu.Unlock()
			return
		}
		if ok {
			tg.passes, tg.fails = tg.passes+1, 0
			if tg.state != "healthy" && tg.passes >= lb.cfg.HealthyThreshold {
				tg.state = "healthy"
				lb.eventLocked(tg.name + " healthy")
			}
		} else {
			tg.passes, tg.fails = 0, tg.fails+1
			if tg.state == "healthy" && tg.fails >= lb.cfg.UnhealthyThreshold {
				tg.state = "unhealthy"
				lb.eventLocked(tg.name + " unhealthy")
				if lb.cfg.TerminateUnhealthy {
					for c := range tg.conns {
						reset = append(reset, c)
					}
				}
			}
		}
		lb.mu.Unlock()
		for _, c := range reset {
			resetConn(c)
		}
	}
}

func (lb *NLB) accept() {
	for {
		c, err := lb.l.Accept()
		if err != nil {
			return
		}
		lb.wg.Go(func() { lb.pass(c) })
	}
}

// pick returns the next healthy target, round robin, or nil.
func (lb *NLB) pick() *nlbTarget {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	for range lb.targets {
		tg := lb.targets[lb.next%len(lb.targets)]
		lb.next++
		if tg.state == "healthy" {
			tg.flows++
			return tg
		}
	}
	return nil
}

// pass carries client connection c to a target and back until either side ends it.
func (lb *NLB) pass(c net.Conn) {
	tg := lb.pick()
	if tg == nil {
		lb.noTarget.Add(1)
		resetConn(c)
		return
	}
	u, err := net.DialTimeout("tcp", tg.addr, 2*time.Second)
	if err != nil {
		lb.dialFailed.Add(1)
		resetConn(c)
		return
	}
	lb.mu.Lock()
	tg.conns[c] = struct{}{}
	lb.mu.Unlock()
	defer func() {
		lb.mu.Lock()
		delete(tg.conns, c)
		lb.mu.Unlock()
	}()
	errc := make(chan error, 2)
	pipe := func(dst, src net.Conn) {
		_, err := io.Copy(dst, src)
		if err == nil {
			_ = dst.(*net.TCPConn).CloseWrite() // a FIN passes on as a FIN
		}
		errc <- err
	}
	go pipe(u, c)
	go pipe(c, u)
	for range 2 {
		if err := <-errc; err != nil && !errors.Is(err, net.ErrClosed) {
			// A reset on one side is a reset on the other.
			resetConn(c)
			resetConn(u)
		}
	}
	c.Close()
	u.Close()
}

// resetConn closes c with a reset rather than a FIN.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// Healthy is a condition for testenv.Eventually: the target name is healthy in the load balancer.
func (lb *NLB) Healthy(name string) func() (bool, string) {
	return func() (bool, string) {
		st := lb.State(name)
		return st == "healthy", fmt.Sprintf("%s is %s in the load balancer", name, st)
	}
}
