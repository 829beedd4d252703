package testenv

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/localstack/proc"
)

// TLSDistrust is what CheckTLSDistrust measured: after the reload that took a CA out of the
// client CA bundle (the time of the service's log line), when each keep-alive connection of that
// CA's callers got its first refusal and when it ended; after a client certificate's expiry, the
// same for its connection.
type TLSDistrust struct {
	PID      int
	Reload   time.Duration            // from the bundle's rename to the reload's log line
	Refused  map[string]time.Duration // by client: its first refusal, after the reload
	Ended    map[string]time.Duration // by client: the end of its connection, after the reload
	Served   map[string]int           // by client of the CA kept: requests served after the reload, on its first connection
	Expired  [2]time.Duration         // the expired certificate's first refusal and its connection's end, after NotAfter
	Messages []string                 // the refusals' messages, one per protocol
}

func (r TLSDistrust) String() string {
	return fmt.Sprintf("pid %d; reload %v after the rename; after it, refused %v, ended %v; kept CA's clients served %v; expired certificate refused %v and its connection ended %v after its expiry; %q",
		r.PID, r.Reload.Round(time.Millisecond), roundAll(r.Refused), roundAll(r.Ended), r.Served,
		r.Expired[0].Round(time.Millisecond), r.Expired[1].Round(time.Millisecond), r.Messages)
}

func roundAll(m map[string]time.Duration) map[string]time.Duration {
	out := map[string]time.Duration{}
	for k, v := range m {
		out[k] = v.Round(time.Millisecond)
	}
	return out
}

// watchedConn is a client's TCP connection that notes when it ended: the first read error, by
// the server (EOF, reset), or the client's own close.
type watchedConn struct {
	net.Conn
	n     int
	ended atomic.Pointer[connEnd]
}

type connEnd struct {
	at       time.Time
	byServer bool
	err      error
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.ended.CompareAndSwap(nil, &connEnd{at: time.Now(), byServer: !errors.Is(err, net.ErrClosed), err: err})
	}
	return n, err
}

func (c *watchedConn) Close() error {
	c.ended.CompareAndSwap(nil, &connEnd{at: time.Now(), err: net.ErrClosed})
	return c.Conn.Close()
}

// keepAlive is a client with keep-alive connections (HTTP/1.1 or HTTP/2 only) whose
// connections are numbered from 1, and the requests it made.
type keepAlive struct {
	name   string
	c      *http.Client
	mu     sync.Mutex
	conns  []*watchedConn
	events []event
}

// event is one request: when it started, on which connection (0: none), and its answer.
type event struct {
	start, end time.Time
	conn       int
	status     int    // the HTTP status; for gRPC, 200 with grpc-status 0, else 403 for status 7
	close      bool   // the response asked to close the connection
	body       string // of a refusal
	err        error
}

func (e event) String() string {
	if e.err != nil {
		return fmt.Sprintf("%s conn %d: %v", e.start.Format("15:04:05.000"), e.conn, e.err)
	}
	return fmt.Sprintf("%s conn %d: %d close=%v %s", e.start.Format("15:04:05.000"), e.conn, e.status, e.close, e.body)
}

func newKeepAlive(name string, roots *CA, cert tls.Certificate, h2 bool) *keepAlive {
	k := &keepAlive{name: name}
	pool := x509.NewCertPool()
	pool.AddCert(roots.Cert)
	cfg := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	protos := new(http.Protocols)
	if h2 {
		protos.SetHTTP2(true)
	} else {
		protos.SetHTTP1(true)
	}
	d := &net.Dialer{Timeout: 2 * time.Second}
	k.c = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, Protocols: protos,
		ForceAttemptHTTP2: h2, MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			k.mu.Lock()
			defer k.mu.Unlock()
			wc := &watchedConn{Conn: c, n: len(k.conns) + 1}
			k.conns = append(k.conns, wc)
			return wc, nil
		}}}
	return k
}

// conn returns connection n (from 1).
func (k *keepAlive) conn(n int) *watchedConn {
	k.mu.Lock()
	defer k.mu.Unlock()
	if n < 1 || n > len(k.conns) {
		return nil
	}
	return k.conns[n-1]
}

// do sends req and records it.
func (k *keepAlive) do(req *http.Request, grpc bool) event {
	ev := event{start: time.Now()}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if tc, ok := i.Conn.(*tls.Conn); ok {
			if wc, ok := tc.NetConn().(*watchedConn); ok {
				ev.conn = wc.n
			}
		}
	}}))
	resp, err := k.c.Do(req)
	if err != nil {
		ev.err = err
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ev.status, ev.close = resp.StatusCode, resp.Close
		if grpc {
			st := resp.Trailer.Get("Grpc-Status")
			if st == "" {
				st = resp.Header.Get("Grpc-Status") // a trailers-only answer
			}
			switch st {
			case "0":
			case "7":
				ev.status = http.StatusForbidden
				msg, _ := url.PathUnescape(resp.Header.Get("Grpc-Message") + resp.Trailer.Get("Grpc-Message"))
				ev.body = "grpc-status 7: " + msg
			default:
				ev.status, ev.err = 0, fmt.Errorf("grpc-status %q", st)
			}
		} else if ev.status != http.StatusOK {
			ev.body = strings.TrimSpace(string(b))
		}
	}
	ev.end = time.Now()
	k.mu.Lock()
	k.events = append(k.events, ev)
	k.mu.Unlock()
	return ev
}

// loop makes a request with mk every few milliseconds until stop is closed.
func (k *keepAlive) loop(wg *sync.WaitGroup, stop <-chan struct{}, mk func() *http.Request, grpc bool) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			k.do(mk(), grpc)
			time.Sleep(5 * time.Millisecond)
		}
	}()
}

func (k *keepAlive) history() []event {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]event(nil), k.events...)
}

// grpcRequest is a gRPC call of method with an empty request message.
func grpcRequest(base, method string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, base+method, bytes.NewReader([]byte{0, 0, 0, 0, 0}))
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	return req
}

// checkRefusedOnItsConnection checks the history of k, a client of the CA taken out, around the
// reload at t0: served on connection 1 before it; from it on, nothing served on connection 1,
// the first request refused with 403 on connection 1 within a second, which asked to close it
// (HTTP/1.1); and nothing served on a later connection either. It returns the refusal.
func checkRefusedOnItsConnection(t *testing.T, k *keepAlive, t0 time.Time, h1 bool) (event, bool) {
	t.Helper()
	hist := k.history()
	var before, served int
	var refusal *event
	for i := range hist {
		ev := &hist[i]
		switch {
		case ev.end.Before(t0):
			if ev.status != http.StatusOK || ev.conn != 1 {
				t.Errorf("%s: before the reload: %v", k.name, ev)
			}
			before++
		case ev.status == http.StatusOK && (ev.start.After(t0) || ev.conn != 1):
			if served++; served == 1 {
				t.Errorf("%s: served after the reload: %v", k.name, ev)
			}
		case ev.status == http.StatusOK: // began before the reload, answered as it happened
		case refusal == nil:
			refusal = ev
			if ev.status != http.StatusForbidden || ev.conn != 1 {
				t.Errorf("%s: the first answer after the reload is not a 403 on its open connection: %v", k.name, ev)
			}
			if h1 && !ev.close {
				t.Errorf("%s: the refusal does not close the HTTP/1.1 connection: %v", k.name, ev)
			}
		case ev.conn == 1 && ev.status != http.StatusForbidden:
			t.Errorf("%s: after the refusal, on the same connection: %v", k.name, ev)
		}
	}
	if served > 0 {
		t.Errorf("%s: %d requests served after the reload", k.name, served)
	}
	if before == 0 {
		t.Errorf("%s: no request before the reload", k.name)
	}
	if refusal == nil {
		t.Errorf("%s: never refused after the reload; its last requests:\n%s", k.name, joinEvents(hist[max(0, len(hist)-3):]))
		return event{}, false
	}
	return *refusal, true
}

func joinEvents(evs []event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.String() + "\n")
	}
	return b.String()
}

// reloadTime returns the time of the service's log line of the client CA's reload after since.
func reloadTime(log string, since time.Time) (time.Time, bool) {
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var l struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
			Kind string    `json:"kind"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "TLS reload: in use from now on" && l.Kind == "client_ca" && l.Time.After(since) {
			return l.Time, true
		}
	}
	return time.Time{}, false
}

// CheckTLSDistrust runs svc with mutual TLS and a client CA bundle of two CAs, A and B, and
// checks, with real handshakes and keep-alive connections opened before the change, that taking
// A out of the bundle reaches A's connections already open: from the reload on, a request on
// one (REST over HTTP/1.1 and HTTP/2, a gRPC call) is refused with 403 (grpc-status 7)
// and the connection ends within a second, as does an idle one and one that carries a gRPC
// health Watch stream; B's connections are served on. Then a client certificate of B that
// expires while its connection is open is refused on it, and the connection ends, within a
// second of its expiry.
func CheckTLSDistrust(t *testing.T, svc TLSService) TLSDistrust {
	t.Helper()
	res := TLSDistrust{Refused: map[string]time.Duration{}, Ended: map[string]time.Duration{}, Served: map[string]int{}}
	dir := t.TempDir()
	caA, caB := NewCA(t, "CA A"), NewCA(t, "CA B")
	f := WriteTLSFiles(t, dir, caA.Server(t), append(append([]byte(nil), caA.PEM...), caB.PEM...), callersFile("orders"))
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	base := "https://" + addr
	hour := time.Now().Add(time.Hour)
	fromA, fromB := caA.Client(t, hour, spiffe("orders")), caB.Client(t, hour, spiffe("orders"))
	p := proc.StartT(t, proc.Spec{Bin: svc.Bin, Args: append(svc.Args(addr, f), "--tls-reload-every", "1m"),
		HealthTimeout: 30 * time.Second, Health: func(context.Context) error {
			c := caA.HTTPSClient(&fromA)
			defer c.CloseIdleConnections()
			if code, err := svc.Probe(c, base); err != nil || code != svc.Allowed {
				return fmt.Errorf("a known caller: %d, %v", code, err)
			}
			return nil
		}})
	res.PID = p.Pid()
	// probe is svc.Probe's request, to send on a keep-alive client's connections.
	probe := func() *http.Request {
		var req *http.Request
		_, _ = svc.Probe(&http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			req = r
			return nil, errors.New("recorded")
		})}, base)
		return req
	}
	grpcCheck := func() *http.Request { return grpcRequest(base, "/grpc.health.v1.Health/Check") }
	probeOK := func(k *keepAlive, mk func() *http.Request, grpc bool) {
		if ev := k.do(mk(), grpc); ev.status != svc.Allowed || ev.conn != 1 {
			t.Fatalf("%s: first request: %v", k.name, ev)
		}
	}

	// A's clients: HTTP/1.1 and HTTP/2 keep-alive connections that go on making requests, a gRPC
	// caller, an idle HTTP/1.1 connection, and an HTTP/2 connection with a health Watch stream.
	h1A, h2A, grpcA, idleA := newKeepAlive("A HTTP/1.1", caA, fromA, false), newKeepAlive("A HTTP/2", caA, fromA, true),
		newKeepAlive("A gRPC", caA, fromA, true), newKeepAlive("A idle HTTP/1.1", caA, fromA, false)
	watchA := newKeepAlive("A gRPC Watch stream", caA, fromA, true)
	h1B, h2B := newKeepAlive("B HTTP/1.1", caA, fromB, false), newKeepAlive("B HTTP/2", caA, fromB, true)
	for _, k := range []*keepAlive{h1A, h2A, idleA, h1B, h2B} {
		probeOK(k, probe, false)
	}
	probeOK(grpcA, grpcCheck, true)
	watchEnded := make(chan time.Time, 1)
	wresp, err := watchA.c.Do(grpcRequest(base, "/grpc.health.v1.Health/Watch"))
	if err != nil {
		t.Fatalf("health Watch: %v", err)
	}
	first := make([]byte, 5)
	if _, err := io.ReadFull(wresp.Body, first); err != nil {
		t.Fatalf("health Watch: the first message: %v", err)
	}
	go func() {
		_, _ = io.Copy(io.Discard, wresp.Body)
		watchEnded <- time.Now()
	}()
	defer wresp.Body.Close()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	stopped := false
	halt := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer halt()
	for _, k := range []*keepAlive{h1A, h2A, h1B, h2B} {
		k.loop(&wg, stop, probe, false)
	}
	grpcA.loop(&wg, stop, grpcCheck, true)
	time.Sleep(200 * time.Millisecond) // requests before the change

	renamed := time.Now()
	RenameInto(t, f.ClientCA, caB.PEM)
	var t0 time.Time
	Eventually(t, 10*time.Second, func() (bool, string) {
		var ok bool
		t0, ok = reloadTime(p.Tail(0), renamed.Add(-time.Second))
		return ok, "no log line of the client CA's reload"
	})
	res.Reload = t0.Sub(renamed)
	// A second and a half of requests after the reload: A's must end within the first second,
	// B's go on.
	time.Sleep(time.Until(t0.Add(1500 * time.Millisecond)))
	halt()

	for _, k := range []*keepAlive{h1A, h2A, grpcA} {
		ref, ok := checkRefusedOnItsConnection(t, k, t0, k == h1A)
		if !ok {
			continue
		}
		res.Refused[k.name] = ref.start.Sub(t0)
		if ref.end.After(t0.Add(time.Second)) {
			t.Errorf("%s: refused %v after the reload, more than a second", k.name, ref.end.Sub(t0))
		}
		if !strings.Contains(ref.body, "no longer verifies") {
			t.Errorf("%s: the refusal does not say why: %q", k.name, ref.body)
		}
		if len(res.Messages) < 2 && (k == h1A || k == grpcA) {
			res.Messages = append(res.Messages, ref.body)
		}
	}
	if len(res.Messages) > 0 && !strings.Contains(res.Messages[0], `"reason":"forbidden"`) {
		t.Errorf("the REST refusal is not the forbidden body a refused caller gets: %s", res.Messages[0])
	}
	for _, k := range []*keepAlive{h1A, h2A, grpcA, idleA} {
		c := k.conn(1)
		end := c.ended.Load()
		switch {
		case end == nil:
			t.Errorf("%s: its connection is still open %v after the reload", k.name, time.Since(t0))
		case end.at.After(t0.Add(time.Second)):
			t.Errorf("%s: its connection ended %v after the reload, more than a second (%v)", k.name, end.at.Sub(t0), end.err)
		case k == idleA && !end.byServer:
			t.Errorf("%s: the client closed its idle connection (%v), not the server", k.name, end.err)
		default:
			res.Ended[k.name] = end.at.Sub(t0)
		}
	}
	select {
	case at := <-watchEnded:
		res.Ended[watchA.name] = at.Sub(t0)
		if at.After(t0.Add(time.Second)) {
			t.Errorf("the health Watch stream of A ended %v after the reload, more than a second", at.Sub(t0))
		}
	default:
		t.Errorf("the health Watch stream of A is still open %v after the reload", time.Since(t0))
	}
	for _, k := range []*keepAlive{h1B, h2B} {
		for _, ev := range k.history() {
			if ev.status != svc.Allowed || ev.conn != 1 {
				t.Errorf("%s: %v", k.name, ev)
				continue
			}
			if ev.start.After(t0) {
				res.Served[k.name]++
			}
		}
		if res.Served[k.name] == 0 {
			t.Errorf("%s: not one request after the reload", k.name)
		}
		if end := k.conn(1).ended.Load(); end != nil {
			t.Errorf("%s: its connection ended (%v)", k.name, end.err)
		}
	}

	// A certificate of B that expires while its connection is open.
	now := time.Now()
	short := caB.issueValid(t, false, []string{spiffe("orders")}, now.Add(-time.Hour), now.Add(2*time.Second))
	notAfter := leafOf(t, short).NotAfter // whole seconds
	exp := newKeepAlive("B, expiring", caA, short, false)
	probeOK(exp, probe, false)
	stop, stopped = make(chan struct{}), false
	exp.loop(&wg, stop, probe, false)
	time.Sleep(time.Until(notAfter.Add(1500 * time.Millisecond)))
	halt()
	var refusal *event
	servedAfter := 0
	for _, ev := range exp.history() {
		switch {
		case ev.status == http.StatusOK && ev.conn == 1 && ev.start.Before(notAfter.Add(100*time.Millisecond)):
		case refusal == nil:
			refusal = &ev
			if ev.status != http.StatusForbidden || ev.conn != 1 || !strings.Contains(ev.body, "expired at") {
				t.Errorf("%s: the first answer after the expiry is not a 403 on its open connection saying so: %v", exp.name, ev)
			}
		case ev.status == http.StatusOK:
			if servedAfter++; servedAfter == 1 {
				t.Errorf("%s: served after the expiry: %v", exp.name, ev)
			}
		}
	}
	if servedAfter > 0 {
		t.Errorf("%s: %d requests served after the expiry", exp.name, servedAfter)
	}
	if refusal == nil || refusal.status != http.StatusForbidden {
		t.Errorf("%s: never refused after its expiry at %s:\n%s", exp.name, notAfter.Format(time.RFC3339), joinEvents(exp.history()[max(0, len(exp.history())-3):]))
	} else {
		res.Expired[0] = refusal.start.Sub(notAfter)
		if refusal.end.After(notAfter.Add(time.Second)) {
			t.Errorf("%s: refused %v after its expiry", exp.name, refusal.end.Sub(notAfter))
		}
	}
	if end := exp.conn(1).ended.Load(); end == nil || end.at.After(notAfter.Add(time.Second)) {
		t.Errorf("%s: its connection did not end within a second of the expiry (%+v)", exp.name, end)
	} else {
		res.Expired[1] = end.at.Sub(notAfter)
	}
	if p.Exited() || p.Pid() != res.PID {
		t.Fatalf("the process ended or changed")
	}
	return res
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func leafOf(t testing.TB, c tls.Certificate) *x509.Certificate {
	t.Helper()
	l, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return l
}
