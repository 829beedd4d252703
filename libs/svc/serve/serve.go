// Package serve is the skeleton every idgen service runs on. Main starts the process (flags
// parsed, a JSON log, a context SIGTERM ends); Serve runs the HTTP server: HTTP/1.1 and HTTP/2
// (h2c in plaintext development mode, ALPN over TLS), bounded timeouts, and a graceful shutdown
// that turns health to NOT_SERVING, stops accepting, drains requests in flight for up to a drain
// time, then closes what is left. API puts a service's Connect service, gRPC health (Health) and
// reflection, /metrics and its REST API (REST, with the one error handler) on one handler.
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
	"syscall"
	"time"
)

// Serve serves h on l until ctx ends, then shuts down gracefully. beforeDrain runs when shutdown
// starts (to turn health checks to NOT_SERVING), before the server stops accepting.
func Serve(ctx context.Context, l net.Listener, h http.Handler, tlsConf *tls.Config, drain time.Duration, log *slog.Logger, beforeDrain func()) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          stdlog.New(RedactingWriter(log, slog.LevelWarn), "", 0),
		Protocols:         new(http.Protocols),
	}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	if tlsConf != nil {
		srv.TLSConfig = tlsConf
		l = tls.NewListener(l, tlsConf)
	} else {
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
	log.Info("shutting down: no new connections, draining requests in flight", "drain", drain.String())
	if beforeDrain != nil {
		beforeDrain()
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	if err := srv.Shutdown(dctx); errors.Is(err, context.DeadlineExceeded) {
		log.Warn("drain time ran out; closing the remaining connections")
		srv.Close()
	}
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
// level tagged with the service's name, and run with a context that SIGTERM or SIGINT ends;
// exit 1 when run fails.
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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, log)
	stop()
	if err != nil {
		log.Error(service+" stopped", "error", err.Error())
		os.Exit(1)
	}
}
