package auth

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultReloadEvery is how often reloaded files are re-read when nothing said they changed.
const DefaultReloadEvery = 30 * time.Second

// settle is how long the watcher waits after the last change in a watched folder before it
// re-reads: an agent that renames a certificate and then its key into place is read once, with
// both.
const settle = 100 * time.Millisecond

// The kinds of reloaded files: the kind label of idgen_tls_reloads_total and, for certificates,
// of idgen_tls_certificate_expiry_timestamp_seconds.
const (
	KindServer   = "server"    // a service's certificate and key
	KindClientCA = "client_ca" // the CA bundle that verifies callers' certificates
	KindCallers  = "callers"   // the callers file (no expiry)
	KindClient   = "client"    // a client's certificate and key
	KindServerCA = "server_ca" // the CA bundle a client verifies servers with (no expiry exported)
)

// Reload says how reloaded files are watched.
type Reload struct {
	// Every is the period of the re-read that catches what a watch misses. Default:
	// DefaultReloadEvery.
	Every time.Duration
	// SIGHUP re-reads every file at once when the process gets SIGHUP, which then no longer ends
	// it.
	SIGHUP bool
	// Log receives a line per reload, refused or not. Default: discard.
	Log *slog.Logger
	// noWatch leaves the periodic re-read and SIGHUP alone (tests of the fallback).
	noWatch bool
}

// loaded is what a source's load installed: the certificate's expiry (zero for the callers
// file) and what its log line says.
type loaded struct {
	expiry time.Time
	attrs  []any
}

// source is one set of files read together, such as a certificate and its key.
type source struct {
	kind   string
	files  []string
	expiry bool // exports its expiry
	// load parses and validates the files' contents and, when they are good, puts them in use.
	load func(contents [][]byte, now time.Time) (loaded, error)
	last [sha256.Size]byte // digest of what was last loaded or refused (contents or the read error)
	// suspect is the digest of files that failed once and are read again after settle before
	// they are refused: a certificate and its key are renamed into place one after the other, and
	// a periodic re-read may fall between the two.
	suspect [sha256.Size]byte
}

// watcher re-reads its sources when their folders change (fsnotify), every period, and on
// SIGHUP; a source whose files read differently from last time is loaded again.
type watcher struct {
	opt     Reload
	log     *slog.Logger
	sources []*source
	expiry  *prometheus.GaugeVec
	reloads *prometheus.CounterVec
	hup     chan os.Signal
	mu      sync.Mutex // one check at a time
	now     func() time.Time
}

func newWatcher(opt Reload) *watcher {
	if opt.Every <= 0 {
		opt.Every = DefaultReloadEvery
	}
	log := opt.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := &watcher{opt: opt, log: log, now: time.Now,
		expiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "idgen_tls_certificate_expiry_timestamp_seconds",
			Help: "When the certificate in use expires, in Unix seconds, by kind: server (the certificate served), client_ca (the earliest of the bundle that verifies callers), client (a client's own)."},
			[]string{"kind"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_tls_reloads_total",
			Help: "Re-reads of changed certificate, key, CA and callers files, by kind (server, client_ca, callers, client, server_ca) and outcome: ok (in use from the next handshake or request) or error (refused: the files in use stay)."},
			[]string{"kind", "outcome"}),
	}
	return w
}

// handleSIGHUP starts taking SIGHUP when the options ask for it, once the files were read
// (a process that refuses to start has no use for it). It is taken before the first run, so a
// SIGHUP between start-up and Run does not end the process either; Run reads it.
func (w *watcher) handleSIGHUP() {
	if w.opt.SIGHUP && w.hup == nil {
		w.hup = make(chan os.Signal, 1)
		signal.Notify(w.hup, syscall.SIGHUP)
	}
}

// add reads s for the first time: an error is the caller's start-up error.
func (w *watcher) add(s *source) error {
	l, err := w.first(s)
	if err != nil {
		// Maybe a certificate whose key is being renamed into place: once more, after settle.
		time.Sleep(settle)
		if l, err = w.first(s); err != nil {
			return err
		}
	}
	if s.expiry {
		w.expiry.WithLabelValues(s.kind).Set(float64(l.expiry.Unix()))
	}
	w.reloads.WithLabelValues(s.kind, "ok")
	w.reloads.WithLabelValues(s.kind, "error")
	w.sources = append(w.sources, s)
	return nil
}

func (w *watcher) first(s *source) (loaded, error) {
	contents, err := readFiles(s.files)
	s.last = digest(contents, err)
	if err != nil {
		return loaded{}, err
	}
	return s.load(contents, w.now())
}

// collectors returns the reload metrics.
func (w *watcher) collectors() []prometheus.Collector {
	return []prometheus.Collector{w.expiry, w.reloads}
}

// stop ends the SIGHUP handling (the process's default then applies again).
func (w *watcher) stop() {
	if w.hup != nil {
		signal.Stop(w.hup)
	}
}

// run watches until ctx ends.
func (w *watcher) run(ctx context.Context) {
	var events <-chan fsnotify.Event
	var errs <-chan error
	if !w.opt.noWatch {
		if fw, err := w.watch(); err != nil {
			w.log.Warn("TLS files: cannot watch their folders; re-reading every period and on SIGHUP only",
				"every", w.opt.Every.String(), "error", err.Error())
		} else {
			defer fw.Close()
			events, errs = fw.Events, fw.Errors
		}
	}
	tick := time.NewTicker(w.opt.Every)
	defer tick.Stop()
	calm := time.NewTimer(time.Hour)
	calm.Stop()
	defer calm.Stop()
	// What changed between the first read and the watch's start is seen now, not a period later.
	retry := w.check(false, "started")
	for {
		if retry {
			calm.Reset(settle)
		}
		retry = false
		select {
		case <-ctx.Done():
			return
		case <-events:
			calm.Reset(settle)
		case err := <-errs:
			w.log.Warn("TLS files: watch error; the periodic re-read goes on", "error", err.Error())
		case <-calm.C:
			retry = w.check(false, "changed")
		case <-tick.C:
			retry = w.check(false, "periodic")
		case <-w.hup:
			w.log.Info("SIGHUP: re-reading the TLS and callers files")
			retry = w.check(true, "SIGHUP")
		}
	}
}

// watch watches the folders of every source's files: agents rename a new file into place (or
// swap a symbolic link to a folder), which changes the folder, not the old file.
func (w *watcher) watch() (*fsnotify.Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, s := range w.sources {
		for _, f := range s.files {
			if d := filepath.Dir(f); !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	for _, d := range dirs {
		if err := fw.Add(d); err != nil {
			fw.Close()
			return nil, fmt.Errorf("watch %s: %w", d, err)
		}
	}
	return fw, nil
}

// check re-reads every source and loads those whose files changed (all of them when force). It
// reports whether files that failed for the first time must be read again after settle, before
// they are refused.
func (w *watcher) check(force bool, trigger string) (retry bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.sources {
		contents, err := readFiles(s.files)
		sum := digest(contents, err)
		if sum == s.last && !force {
			continue
		}
		var l loaded
		if err == nil {
			l, err = s.load(contents, w.now())
		}
		if err != nil && s.suspect != sum {
			s.suspect = sum // maybe half renamed: read again once the files settle
			retry = true
			continue
		}
		s.last = sum
		if err != nil {
			w.reloads.WithLabelValues(s.kind, "error").Inc()
			w.log.Error("TLS reload refused: the files in use stay", "kind", s.kind, "files", s.files,
				"trigger", trigger, "error", err.Error())
			continue
		}
		w.reloads.WithLabelValues(s.kind, "ok").Inc()
		if s.expiry {
			w.expiry.WithLabelValues(s.kind).Set(float64(l.expiry.Unix()))
		}
		w.log.Info("TLS reload: in use from now on", append([]any{"kind", s.kind, "files", s.files, "trigger", trigger}, l.attrs...)...)
	}
	return retry
}

func readFiles(files []string) ([][]byte, error) {
	out := make([][]byte, len(files))
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// digest identifies what a read found: the files' contents, or the error, so that the same bad
// state is reported once, not every period.
func digest(contents [][]byte, err error) [sha256.Size]byte {
	h := sha256.New()
	if err != nil {
		h.Write([]byte("error\x00" + err.Error()))
	}
	for _, c := range contents {
		_ = binary.Write(h, binary.BigEndian, int64(len(c)))
		h.Write(c)
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
