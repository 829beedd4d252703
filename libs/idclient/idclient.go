// Package idclient is the calling teams' client of the generator service. It keeps a buffer of
// prefetched IDs, refilled in the background by batches when it falls below a low-water mark, so
// most calls to Next cost no network round trip. The buffer holds whole batches: Next takes IDs
// from the current batch by an atomic index, without a lock, and refills run ahead of it, as many
// at once as the low-water mark asks for (LowWater above Batch lets them overlap, so that a
// generator is never idle waiting for the client's next call). The mark rises above LowWater, up
// to MaxLowWater, by the IDs taken in the time a batch spends between its issue and the buffer:
// an application whose goroutines keep the CPU busy delays its own refills' answers (the Go
// scheduler reads the network late while goroutines are runnable), and the buffer must last
// through that delay too. Endpoints are ordered: the local
// region first, then its peer. On a connection error, a 503 (Connect unavailable) or a failed health probe it
// moves to the next endpoint (those IDs carry the peer's region number), and it moves back to the
// local one once the local one's gRPC health check answers SERVING again. A 503 and a failed
// probe are asked again at once on a new connection first: behind a load balancer each
// connection is one generator's, and one generator draining or without a lease is not its
// region. Decoding is local.
//
// A frozen endpoint (a SIGSTOPped process, a hung host) answers nothing and refuses nothing, so
// those rules alone would leave callers waiting for the whole CallTimeout before the move. So a
// refill hedges: when the buffer is empty and the endpoint asked has not answered within
// HedgeAfter (50 ms by default), nor sent any other batch for as long, the next endpoint is asked
// too, and the first answer fills the buffer; an empty buffer waits at most about HedgeAfter
// plus the next endpoint's latency. One hedged call is in flight at a time (its batch fills the
// buffer for every refill waiting). Both answers are batches of unique IDs issued to this client,
// so neither is discarded: the later one goes into the buffer as well (which may then hold up to
// two batches), and no ID is ever handed out twice; IDs that are never handed out (the buffer at
// Close) are only skipped. While a call to an endpoint is still unanswered past HedgeAfter and no
// batch has come from it since that call began, refills go straight to the next endpoint rather
// than queue behind it. An endpoint whose batches keep coming is not frozen: a process whose
// goroutines keep the CPU busy reads its answers late, and with several calls in flight each
// looks unanswered long after the generator answered it. Hedging changes where IDs come from, not
// which endpoint is active: the client still moves when the slow call ends in a timeout or a
// health probe fails, and back when the local endpoint is healthy, as above
// (idgen_client_active_endpoint, idgen_client_failovers_total); idgen_client_hedges_total counts
// the hedged calls.
//
// A caller's endpoints come from the topology's client_config (ReadClientConfig, then
// ClientConfig.ConfigFor with the caller's region): the same values Terraform lays the regions
// and their peers out with, never a list of the caller's own.
//
// IDs from the buffer are unique like any other (each was issued once, to this client), but a
// buffer refilled from two regions is not in creation order, nor is one whose refills overlap
// (waiting batches are handed out lowest first, but one may come back after a later one was
// begun): order IDs by their timestamps, not by the order Next returned them, when that matters.
package idclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/grpchealth"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Client. Zero values take the defaults in the comments.
type Config struct {
	// Endpoints are base URLs, local region first, then its peer. Required: from the topology's
	// client_config (ClientConfig.ConfigFor).
	Endpoints []string
	// HTTPClient carries the calls. Default: a client speaking HTTP/1.1 and h2c, or with TLS
	// the one it builds.
	HTTPClient *http.Client
	// TLS, in production, is where the caller's client certificate, key and CA bundle are read
	// from; they are re-read when they change (TLSFiles), so a renewed certificate is used
	// without a restart. It excludes HTTPClient.
	TLS *TLSFiles
	// Batch is how many IDs one refill asks for (1–1,000). Default: 1,000.
	Batch int
	// LowWater: a refill starts when the buffer holds fewer IDs than the low-water mark in force;
	// as many run at once as there are batches in the mark (rounded up), so the buffer holds
	// fewer than the mark plus that many batches. The mark is LowWater plus the IDs taken in the
	// time a batch spends between its issue (its IDs' timestamp) and the buffer, which the
	// caller's own process adds to each refill when its goroutines keep the CPU busy (see
	// MaxLowWater); with nothing taken it is LowWater. Default: Batch/2, at least 1 (one refill at
	// a time), and at most MaxLowWater when that is set.
	LowWater int
	// MaxLowWater bounds the low-water mark in force (LowWater above): the rate IDs are taken
	// (smoothed over 50 ms windows) times the peak delay from a batch's issue to the buffer
	// (halving each second) is added to LowWater, up to MaxLowWater. A client clock ahead of the
	// generator's counts as delay; IDs older than CallTimeout on arrival are not counted.
	// Default: 16 batches, at least LowWater; equal to LowWater: a fixed mark.
	MaxLowWater int
	// ProbeEvery is how often the local endpoint's health is checked. Default: 1 s.
	ProbeEvery time.Duration
	// CallTimeout bounds each call to a generator. Default: 2 s.
	CallTimeout time.Duration
	// HedgeAfter: while the buffer is empty, a refill that has had no answer from the endpoint it
	// asked for this long, and no other batch from it for as long, asks the next endpoint too and
	// takes the first answer, one such call at a time (see the package doc). Default: 50 ms;
	// negative: never hedge (wait for CallTimeout, then move).
	HedgeAfter time.Duration
	// Schedule decodes IDs locally. Default: idcore.ScheduleV2.
	Schedule idcore.Schedule
	// Logger: default discard.
	Logger *slog.Logger
}

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("idclient: closed")

// Client is safe for concurrent use.
type Client struct {
	cfg     Config
	log     *slog.Logger
	clients []idgenv1connect.IdServiceClient
	health  []*grpchealth.Client

	// The buffer (buffer.go): Next reads cur and closed without the lock.
	cur    atomic.Pointer[batch] // the batch Next takes from
	closed atomic.Bool

	mu        sync.Mutex
	ready     []*batch      // the batches behind cur, the next to begin last
	queued    int           // IDs in ready
	refilling int           // refills under way (fetch), at most ceil(mark/Batch)
	mark      int           // the low-water mark in force, LowWater to MaxLowWater (lowwater.go)
	adapt     adapt         // what sets mark
	filled    chan struct{} // closed and replaced when a batch comes
	dry       chan struct{} // closed while a Next finds the buffer empty (dryClosed)
	dryClosed bool
	lastErr   error
	inflight  map[*call]struct{} // calls to the generators not answered yet
	answered  []time.Time        // per endpoint: when its last batch came
	hedging   int                // hedged calls in flight (mayHedge: at most one)

	active    atomic.Int32
	wake      chan struct{}
	stop      chan struct{}
	life      context.Context // the calls' parent; Close cancels it
	cancel    context.CancelFunc
	done      sync.WaitGroup
	tls       *auth.ClientTLS // with Config.TLS: the certificate, key and CA, re-read until Close
	failovers prometheus.Counter
	fetched   prometheus.Counter
	hedges    prometheus.Counter
}

// New starts a client: its refill and probe loops run until Close.
func New(cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("idclient: no endpoints")
	}
	if cfg.Batch == 0 {
		cfg.Batch = 1000
	}
	if cfg.Batch < 1 || cfg.Batch > 1000 {
		return nil, fmt.Errorf("idclient: batch %d, want 1-1000", cfg.Batch)
	}
	if cfg.LowWater == 0 {
		cfg.LowWater = max(1, cfg.Batch/2) // with Batch 1, Batch/2 was 0: no refill ever started
		if cfg.MaxLowWater > 0 {
			cfg.LowWater = min(cfg.LowWater, cfg.MaxLowWater) // a bound set alone holds
		}
	}
	if cfg.MaxLowWater == 0 {
		cfg.MaxLowWater = max(cfg.LowWater, 16*cfg.Batch)
	}
	if cfg.LowWater < 1 || cfg.MaxLowWater < cfg.LowWater {
		return nil, fmt.Errorf("idclient: low-water mark %d, most %d: want 1 or more, and no more than the most", cfg.LowWater, cfg.MaxLowWater)
	}
	if cfg.ProbeEvery == 0 {
		cfg.ProbeEvery = time.Second
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 2 * time.Second
	}
	if cfg.HedgeAfter == 0 {
		cfg.HedgeAfter = 50 * time.Millisecond
	}
	if cfg.Schedule.Name() == "" {
		cfg.Schedule = idcore.ScheduleV2()
	}
	ct, err := openTLS(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = H2CClient()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := &Client{cfg: cfg, log: cfg.Logger, filled: make(chan struct{}), dry: make(chan struct{}), wake: make(chan struct{}, 1), stop: make(chan struct{}),
		inflight:  map[*call]struct{}{},
		failovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "idgen_client_failovers_total", Help: "Moves from one endpoint to another."}),
		fetched:   prometheus.NewCounter(prometheus.CounterOpts{Name: "idgen_client_ids_fetched_total", Help: "IDs fetched into the buffer."}),
		hedges: prometheus.NewCounter(prometheus.CounterOpts{Name: "idgen_client_hedges_total",
			Help: "Calls to the next endpoint made because the buffer was empty and the endpoint asked had not answered within the hedge delay."}),
	}
	c.cur.Store(used())
	c.mark = cfg.LowWater
	c.life, c.cancel = context.WithCancel(context.Background())
	c.answered = make([]time.Time, len(cfg.Endpoints))
	for _, ep := range cfg.Endpoints {
		c.clients = append(c.clients, idgenv1connect.NewIdServiceClient(cfg.HTTPClient, ep))
		c.health = append(c.health, grpchealth.NewClient(cfg.HTTPClient, ep))
	}
	if c.tls = ct; ct != nil {
		c.done.Go(func() { ct.Run(c.life) })
	}
	c.done.Add(2)
	go c.refillLoop()
	go c.probeLoop()
	c.kick()
	return c, nil
}

// H2CClient returns an HTTP client that speaks HTTP/1.1 and, without TLS, HTTP/2 (h2c).
func H2CClient() *http.Client {
	t := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     time.Minute,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		Protocols:           new(http.Protocols),
	}
	t.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: t}
}

// Collectors returns the client's metrics (buffer level, failovers, IDs fetched, the active
// endpoint, hedged calls, the low-water mark in force and, with TLS, its certificate's expiry
// and reloads) for the application to register.
func (c *Client) Collectors() []prometheus.Collector {
	return append([]prometheus.Collector{
		c.failovers, c.fetched,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "idgen_client_buffer_ids", Help: "IDs waiting in the buffer."},
			func() float64 { c.mu.Lock(); defer c.mu.Unlock(); return float64(c.levelLocked()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "idgen_client_active_endpoint", Help: "Index of the endpoint in use (0: local)."},
			func() float64 { return float64(c.active.Load()) }),
		c.hedges,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "idgen_client_low_water_ids",
			Help: "The low-water mark in force: LowWater, raised by the rate IDs are taken times the delay from a batch's issue to the buffer, up to MaxLowWater."},
			func() float64 { c.mu.Lock(); defer c.mu.Unlock(); return float64(c.mark) }),
	}, c.tlsCollectors()...)
}

// Active returns the endpoint in use.
func (c *Client) Active() string { return c.cfg.Endpoints[c.active.Load()] }

// Next returns an ID from the buffer, waiting for a refill when it is empty.
func (c *Client) Next(ctx context.Context) (idcore.ID, error) {
	for {
		if c.closed.Load() {
			return 0, ErrClosed
		}
		b := c.cur.Load()
		if id, kick, ok := b.take(); ok {
			if kick {
				c.kick()
			}
			return id, nil
		}
		c.mu.Lock()
		if c.closed.Load() {
			c.mu.Unlock()
			return 0, ErrClosed
		}
		if c.advanceLocked(b) {
			low := c.wantLocked() // and sets where the new batch kicks
			c.mu.Unlock()
			if low {
				c.kick()
			}
			continue
		}
		filled := c.filled
		c.markDryLocked() // a refill in flight may hedge now
		c.mu.Unlock()
		c.kick()
		select {
		case <-filled:
		case <-ctx.Done():
			c.mu.Lock()
			lastErr := c.lastErr
			c.mu.Unlock()
			if lastErr != nil {
				return 0, fmt.Errorf("idclient: no ID: %w (last error: %v)", ctx.Err(), lastErr)
			}
			return 0, ctx.Err()
		}
	}
}

// Decode takes an ID apart locally.
func (c *Client) Decode(id idcore.ID) (idcore.Decoded, error) { return c.cfg.Schedule.Decode(id) }

// Close stops the background loops. IDs left in the buffer, and batches that come after, are
// dropped (never reused); a Next waiting for IDs, and every Next after, returns ErrClosed.
func (c *Client) Close() {
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return
	}
	c.closed.Store(true)
	c.cur.Store(used())
	c.ready, c.queued = nil, 0
	close(c.filled) // wakes the Nexts waiting: they find the client closed
	c.filled = make(chan struct{})
	c.mu.Unlock()
	close(c.stop)
	c.cancel()
	c.done.Wait()
}

func (c *Client) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// moveFrom moves from endpoint i to the next one (if still on i).
func (c *Client) moveFrom(i int, why error) {
	next := int32((i + 1) % len(c.clients))
	if next != int32(i) && c.active.CompareAndSwap(int32(i), next) {
		c.failovers.Inc()
		c.log.Warn("idclient: moving to the next endpoint", "from", c.cfg.Endpoints[i], "to", c.cfg.Endpoints[next], "error", why)
	}
}

// probeLoop checks the local endpoint's health: it leaves it when two checks in a row say it is
// unhealthy and returns to it once one says it is healthy again.
func (c *Client) probeLoop() {
	defer c.done.Done()
	t := time.NewTicker(c.cfg.ProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if len(c.clients) < 2 {
			continue
		}
		healthy, err := c.probe()
		if !healthy && err != nil && c.active.Load() == 0 && c.life.Err() == nil {
			// Once more, on a new connection, before leaving: the answer may be one generator's
			// (draining, or without a lease yet) on the connection the client holds to it, and a
			// new connection reaches another (the region's load balancer sends new ones to
			// healthy targets only).
			c.cfg.HTTPClient.CloseIdleConnections()
			healthy, err = c.probe()
		}
		if c.life.Err() != nil {
			return // closing: the probe was cut short, not failed
		}
		switch a := c.active.Load(); {
		case a != 0 && healthy:
			c.active.Store(0)
			c.failovers.Inc()
			c.log.Info("idclient: the local endpoint is healthy again; moving back", "to", c.cfg.Endpoints[0])
		case a == 0 && !healthy:
			c.moveFrom(0, err)
		}
	}
}

// probe checks the local endpoint's gRPC health once; err says why it is not healthy.
func (c *Client) probe() (bool, error) {
	ctx, cancel := context.WithTimeout(c.life, c.cfg.CallTimeout)
	defer cancel()
	res, err := c.health[0].Check(ctx, &grpchealth.CheckRequest{Service: idgenv1connect.IdServiceName})
	if err != nil {
		return false, err
	}
	if res.Status != grpchealth.StatusServing {
		return false, fmt.Errorf("health %v", res.Status)
	}
	return true, nil
}
