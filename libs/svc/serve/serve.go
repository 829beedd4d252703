// Package serve is the skeleton every idgen service runs on. Main starts the process (flags
// parsed, a JSON log, a context SIGTERM ends); Serve runs the HTTP server: HTTP/1.1 and HTTP/2
// (h2c in plaintext development mode, ALPN over TLS; HTTP/2 requests handed to pooled goroutines
// whose stacks have grown, see grownStacks), bounded timeouts, and a graceful shutdown
// in the order a load balancer needs (Shutdown): health turns to NOT_SERVING and /healthz to 503
// draining at once while the API serves on for a deregistration delay, every response asking its
// client to close its connection; only then does the listener close and requests in flight drain
// for up to a drain time, and what is left is closed. API puts a service's Connect service, gRPC
// health (Health) and reflection, /metrics and its REST API (REST, with the one error handler) on
// one handler.
package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/idgen/idgen/libs/svc/auth"
)

// Shutdown is how Serve ends once its context does, in the order a load balancer needs. An NLB
// stops opening connections to a target only once its health check has seen the target fail a
// few times in a row (interval × unhealthy threshold), or once the target is deregistered, and
// it never closes the connections already open: so the target goes on serving while /healthz
// says it is leaving, and tells each client to open a new connection (which the load balancer
// gives to another target), and closes its listener only when no new connection should come.
type Shutdown struct {
	// Delay is the deregistration delay: from the start of a shutdown, for this long the listener
	// stays open and every request is served, with Health NOT_SERVING (a /healthz answering 503
	// draining) and every response carrying Connection: close over HTTP/1.1, or making the server
	// send a GOAWAY over HTTP/2, so clients move to new connections. 0: the listener closes at
	// once.
	Delay time.Duration
	// Drain is how long requests in flight may take once the listener is closed; then the
	// connections left are closed.
	Drain time.Duration
	// Health, when not nil, is drained (NOT_SERVING for good) when the shutdown starts.
	Health *Health
	// SkipDelay, when not nil and true at the start of the shutdown, skips the delay: a service
	// that never became ready was never in a load balancer's rotation.
	SkipDelay func() bool
}

type hurryKey struct{}

// WithHurry returns a context whose Serve ends its deregistration delay early once hurry is
// closed (the drain still runs). Main closes it at a second SIGTERM or SIGINT.
func WithHurry(ctx context.Context, hurry <-chan struct{}) context.Context {
	return context.WithValue(ctx, hurryKey{}, hurry)
}

// hurryOf returns the channel WithHurry put in ctx, or nil (which never fires).
func hurryOf(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(hurryKey{}).(<-chan struct{})
	return ch
}

// Serve serves h on l until ctx ends, then shuts down as sd says: health drained and every
// response asking its client to close its connection, for sd.Delay with the listener still open;
// then no new connections, and requests in flight drained for up to sd.Drain. With a Gate's TLS
// configuration (auth.Setup), the Gate tracks the connections: one whose client certificate
// stops being trusted is refused (WithRequest answers 403) and closed.
func Serve(ctx context.Context, l net.Listener, h http.Handler, tlsConf *tls.Config, sd Shutdown, log *slog.Logger) error {
	return ServeWithout(ctx, l, h, tlsConf, sd, log, Without{})
}

// Without names settings of Serve's server to leave off, for the benchmark that measures what
// each one costs (bench/skeleton.sh, through bench/cmd/bare); the services never leave one off.
type Without struct {
	Timeouts bool // ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout: none
	H2C      bool // no HTTP/2 in plaintext (without TLS: HTTP/1.1 only)
	Pool     bool // no grownStacks: each HTTP/2 request on its own goroutine
}

// ServeWithout is Serve with the settings wo names left off.
func ServeWithout(ctx context.Context, l net.Listener, h http.Handler, tlsConf *tls.Config, sd Shutdown, log *slog.Logger, wo Without) error {
	var draining atomic.Bool
	var handler http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			// HTTP/1.1: the server closes the connection after this response. HTTP/2: the
			// header is not sent; the server sends a GOAWAY and closes the connection once
			// its streams are done (net/http's HTTP/2 server does so for this header).
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
	if !wo.Pool {
		// HTTP/2 requests run on pooled goroutines with grown stacks (grownStacks).
		stacks := newGrownStacks(handler)
		defer stacks.close()
		handler = stacks
	}
	srv := &http.Server{
		Handler:        handler,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       stdlog.New(RedactingWriter(log, slog.LevelWarn), "", 0),
		Protocols:      new(http.Protocols),
	}
	if !wo.Timeouts {
		srv.ReadHeaderTimeout = 5 * time.Second
		srv.ReadTimeout = 30 * time.Second
		srv.WriteTimeout = 30 * time.Second
		srv.IdleTimeout = 2 * time.Minute
	}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	if tlsConf != nil {
		srv.TLSConfig = tlsConf
		// A Gate's configuration: its connections are tracked, so that one whose client
		// certificate stops being trusted is refused and closed (auth.ConnHooks).
		if hk, ok := auth.HooksFor(tlsConf); ok {
			srv.ConnContext, srv.ConnState = hk.ConnContext, hk.ConnState
		}
		l = tls.NewListener(l, tlsConf)
	} else if !wo.H2C {
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	log.Info("listening", "addr", l.Addr().String(), "tls", tlsConf != nil)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	draining.Store(true)
	if sd.Health != nil {
		sd.Health.Drain()
	}
	if sd.Delay > 0 && sd.SkipDelay != nil && sd.SkipDelay() {
		log.Info("never ready: no deregistration delay")
	} else if sd.Delay > 0 {
		log.Info("draining: health answers 503 and every response asks its client to close its connection; serving on for the deregistration delay",
			"deregistration_delay", sd.Delay.String())
		t := time.NewTimer(sd.Delay)
		select {
		case <-t.C:
		case <-hurryOf(ctx):
			t.Stop()
			log.Warn("a second signal: ending the deregistration delay now")
		case err := <-errc:
			t.Stop()
			return err
		}
	}
	log.Info("shutting down: no new connections, draining requests in flight", "drain", sd.Drain.String())
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sd.Drain)
	defer cancel()
	if err := srv.Shutdown(dctx); errors.Is(err, context.DeadlineExceeded) {
		log.Warn("drain time ran out; closing the remaining connections")
		srv.Close()
	}
	<-errc // srv.Serve has returned: the listener is closed, even one Serve had not taken yet
	return nil
}

// RedactingWriter returns a writer for the standard library's loggers (log.SetOutput, an
// http.Server's ErrorLog) that logs each message through l at level, redacted (Redact): net/http
// quotes the bytes it received in its messages ("Unsolicited response received on idle HTTP
// channel starting with %q" holds an upstream's body), and a log must never hold a value.
func RedactingWriter(l *slog.Logger, level slog.Level) io.Writer {
	return redactingWriter{l, level}
}

type redactingWriter struct {
	l     *slog.Logger
	level slog.Level
}

// Write logs p, one message of a log.Logger (which writes each message at once).
func (w redactingWriter) Write(p []byte) (int, error) {
	w.l.Log(context.Background(), w.level, Redact(strings.TrimRight(string(p), "\n")))
	return len(p), nil
}

// Redacted stands for what Redact removed.
const Redacted = "[redacted]"

// Redact removes from a message of the standard library (a log line, an error) what may hold
// bytes it received: every quoted string ("…" with its escapes, or `…`), and everything after
// "starting with". What stays says what happened, never with what.
func Redact(msg string) string {
	if i := strings.Index(msg, "starting with"); i >= 0 {
		msg = msg[:i+len("starting with")] + " " + Redacted
	}
	var b strings.Builder
	for {
		i := strings.IndexAny(msg, "\"`")
		if i < 0 {
			break
		}
		b.WriteString(msg[:i])
		b.WriteString(Redacted)
		q := msg[i]
		j := i + 1
		for j < len(msg) && msg[j] != q {
			if q == '"' && msg[j] == '\\' {
				j++ // an escape: the next byte is quoted, whatever it is
			}
			j++
		}
		if j >= len(msg) {
			return b.String() // unterminated: the rest is quoted
		}
		msg = msg[j+1:]
	}
	if b.Len() == 0 {
		return msg
	}
	b.WriteString(msg)
	return b.String()
}

// DefaultGCPercent is the garbage collector's target (GOGC) the services run with when GOGC is
// not set. Their live heap is a few MiB, so at Go's default of 100 the collector starts after
// every few MiB allocated: about a hundred cycles a second at 50,000 requests a second. At 400 it
// runs a fifth as often, for about 12 MiB more resident memory.
const DefaultGCPercent = 400

// DefaultMemoryLimit is the soft memory limit (GOMEMLIMIT) the services run with when
// GOMEMLIMIT is not set: a backstop for the higher GC target. Memory recycled through a
// sync.Pool survives a collection; at a high GOGC a pool that takes more than it gives back can
// grow the heap goal from one cycle to the next (seen with go-redis's autopipeliner, see
// services/public-id/mapping/redismap). Near the limit the collector runs as often as it must.
const DefaultMemoryLimit = 256 << 20

// SetGC sets the garbage collector's target to DefaultGCPercent unless GOGC is set, and the soft
// memory limit to DefaultMemoryLimit unless GOMEMLIMIT is set.
func SetGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(DefaultMemoryLimit)
	}
}

// Main is a service's main once its flags are parsed (parseErr is that parse's error): exit 2 on
// bad flags or an unknown log level; otherwise the GC target (SetGC), a slog JSON logger at
// level tagged with the service's name, and run with a context that the first SIGTERM or SIGINT
// ends; a second one ends Serve's deregistration delay early (WithHurry), and later ones are
// ignored, so the drain and a generator's lease release still happen. Exit 1 when run fails.
func Main(service string, parseErr error, level string, run func(ctx context.Context, log *slog.Logger) error) {
	var lv slog.Level
	if parseErr == nil {
		if err := lv.UnmarshalText([]byte(level)); err != nil {
			parseErr = fmt.Errorf("--log-level: %w", err)
		}
	}
	if errors.Is(parseErr, flag.ErrHelp) {
		os.Exit(0) // --help: the flag set has printed the usage
	}
	if parseErr != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", service, parseErr)
		os.Exit(2)
	}
	SetGC()
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lv})).With("service", service)
	// The standard library's own logs (net/http's Transport logs through the log package) go
	// through the service's log, with what they quote of the bytes they received removed.
	stdlog.SetFlags(0)
	stdlog.SetOutput(RedactingWriter(log, slog.LevelWarn))
	ctx, cancel := context.WithCancel(context.Background())
	hurry := make(chan struct{})
	ctx = WithHurry(ctx, hurry)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sigs
		log.Info("signal: shutting down", "signal", s.String())
		cancel()
		s = <-sigs
		log.Info("second signal: no more waiting for the deregistration delay", "signal", s.String())
		close(hurry)
		for range sigs {
		}
	}()
	err := run(ctx, log)
	cancel()
	if err != nil {
		log.Error(service+" stopped", "error", err.Error())
		os.Exit(1)
	}
}
