package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/prometheus/client_golang/prometheus"
)

// A generator given a registry URL keeps a copy of the registry's last answer, written on every
// successful read, so that a start while the registry is down can use the regions last read,
// within bounds (docs/regions.md#how-generators-use-it). Without a registry URL (a file, or the
// built-in regions) there is no copy and nothing to be unreachable.

// regionsCopy is the copy's file: the registry's answer ({"regions": […]}, so the file is also a
// registry file --registry can name), where and when it was read.
type regionsCopy struct {
	Registry string          `json:"registry"`
	ReadAt   time.Time       `json:"read_at"`
	Regions  []region.Region `json:"regions"`
}

// writeCopy replaces the copy at path atomically: a temporary file in the same folder, synced,
// then renamed over the old one, so a crash leaves the old copy or the new one, never a part.
func writeCopy(path string, c regionsCopy) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil { // the rename itself, durable
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// readCopy reads the copy at path for a start from it: it must exist, have been read from
// registry, list regions, and be at most maxAge old. Each refusal names the file and why.
func readCopy(path, registry string, maxAge time.Duration, now time.Time) (regionsCopy, error) {
	var c regionsCopy
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, fmt.Errorf("no copy of the regions at %s: the registry was never read here (a host with an empty disk needs the registry to start)", path)
	}
	if err != nil {
		return c, fmt.Errorf("the copy of the regions at %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("the copy of the regions at %s is not readable: %w", path, err)
	}
	switch age := now.Sub(c.ReadAt); {
	case c.Registry != registry:
		return c, fmt.Errorf("the copy of the regions at %s was read from registry %s, not from --registry %s", path, c.Registry, registry)
	case len(c.Regions) == 0 || c.ReadAt.IsZero():
		return c, fmt.Errorf("the copy of the regions at %s lists no regions or no read_at", path)
	case age > maxAge:
		return c, fmt.Errorf("the copy of the regions at %s was read from the registry at %s, %v ago: older than --registry-cache-max-age %v",
			path, c.ReadAt.UTC().Format(time.RFC3339), age.Round(time.Second), maxAge)
	}
	return c, nil
}

// registryRetry is how soon a registry that did not answer is asked again (at most
// --registry-refresh).
const registryRetry = 5 * time.Second

// ReasonRegistryUnreachable is /healthz's reason (status degraded, still 200) while the
// generator cannot read its registry.
const ReasonRegistryUnreachable = "registry_unreachable"

// registryState is what the generator knows of its registry URL: whether the last read
// answered, when the regions in use were read, and whether they have been checked against the
// registry (false while a start from the copy waits for its first read).
type registryState struct {
	copyPath    string // "" without a copy
	fromCopy    bool   // the start used the copy
	reachable   atomic.Bool
	readAt      atomic.Int64           // Unix ms of the last successful read (the copy's read_at)
	lastErr     atomic.Pointer[string] // the last read's error while unreachable
	confirmed   atomic.Bool            // the regions in use have been read from the registry
	fatal       atomic.Pointer[error]  // why the generator stopped itself (Serve returns it)
	warned      string                 // the last disagreement logged (watchRegistry's own)
	copyFailing bool                   // the last write of the copy failed (New's, then watchRegistry's)
	stop        func()                 // ends Serve (set by Serve before watchRegistry starts)
}

// startRegions reads the regions to start on. From a registry URL: the registry's answer,
// written to the copy; when the registry does not answer, the copy, when there is one that
// readCopy accepts. From a file or without --registry: as always, no copy.
func (s *Server) startRegions(ctx context.Context) ([]region.Region, error) {
	regions, err := loadRegions(ctx, s.cfg.Registry, s.regClient)
	if !s.cfg.RegistryIsURL() {
		return regions, err
	}
	st := &s.regState
	st.copyPath = s.cfg.RegistryCachePath()
	now := time.Now()
	if err == nil {
		st.read(now)
		st.confirmed.Store(true)
		s.saveCopy(regions, now)
		return regions, nil
	}
	if st.copyPath == "" {
		return nil, fmt.Errorf("%w (--registry-cache off: no copy to start from)", err)
	}
	c, cerr := readCopy(st.copyPath, s.cfg.Registry, s.cfg.RegistryMaxAge, now)
	if cerr != nil {
		return nil, fmt.Errorf("%w; refusing to start from a copy: %w", err, cerr)
	}
	st.fromCopy = true
	st.unreachable(err)
	st.readAt.Store(c.ReadAt.UnixMilli())
	s.log.Warn("registry unreachable: starting from the copy of the regions last read from it; it is checked against the registry as soon as it answers",
		"copy", st.copyPath, "read_at", c.ReadAt.UTC().Format(time.RFC3339), "age", time.Since(c.ReadAt).Round(time.Second).String(), "error", err.Error())
	return c.Regions, nil
}

// startRefusal says where the regions that refuse a start came from.
func (s *Server) startRefusal(err error) error {
	if s.regState.fromCopy {
		at := time.UnixMilli(s.regState.readAt.Load()).UTC().Format(time.RFC3339)
		return fmt.Errorf("generator: refusing to start: the registry does not answer, and in the copy of the regions at %s (read at %s): %w", s.regState.copyPath, at, err)
	}
	return fmt.Errorf("generator: refusing to start: %w", err)
}

func (st *registryState) read(now time.Time) {
	st.reachable.Store(true)
	st.readAt.Store(now.UnixMilli())
	st.lastErr.Store(nil)
}

func (st *registryState) unreachable(err error) {
	msg := err.Error()
	st.lastErr.Store(&msg)
	st.reachable.Store(false)
}

// saveCopy writes the registry's answer to the copy (a failure is logged: the generator runs on,
// but a start while the registry is down would find an older copy or none).
func (s *Server) saveCopy(regions []region.Region, now time.Time) {
	if s.regState.copyPath == "" {
		return
	}
	err := writeCopy(s.regState.copyPath, regionsCopy{Registry: s.cfg.Registry, ReadAt: now.UTC(), Regions: regions})
	switch failing := s.regState.copyFailing; {
	case err != nil && !failing:
		s.log.Warn("registry: the copy of the regions cannot be written; a start while the registry is down finds an older one or none",
			"copy", s.regState.copyPath, "error", err.Error())
	case err == nil && failing:
		s.log.Info("registry: the copy of the regions is written again", "copy", s.regState.copyPath)
	}
	s.regState.copyFailing = err != nil
}

// checkRegion holds the registry's answer against the region the generator runs as, by the
// start-up rules: the region must be listed, active, and have the number in use.
func (s *Server) checkRegion(regions []region.Region) error {
	r, err := region.ForGenerator(regions, s.cfg.Region)
	if err != nil {
		return err
	}
	if r.Number != s.region.Number {
		return fmt.Errorf("region %s has number %d in the registry, and this generator issues as number %d", r.Name, r.Number, s.region.Number)
	}
	return nil
}

// watchRegistry reads a registry URL again every --registry-refresh (every registryRetry while it
// does not answer), off the request path: each answer replaces decode's region names and the
// copy. The first answer after a start from the copy is the start-up check the registry could
// not make then: when it fails (the region retired, unknown or renumbered), the generator stops,
// as it would have refused to start. After a start checked by the registry, a change to its own
// region is logged and the generator issues on until stopped (runbooks/region-add-retire.md);
// the copy then refuses the next start.
func (s *Server) watchRegistry(ctx context.Context) {
	if !s.cfg.RegistryIsURL() {
		return
	}
	st := &s.regState
	t := time.NewTimer(s.nextRead())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		regions, err := loadRegions(ctx, s.cfg.Registry, s.regClient)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if st.reachable.Load() {
				s.log.Warn("registry unreachable: running on the regions last read from it", "error", err.Error(),
					"read_at", time.UnixMilli(st.readAt.Load()).UTC().Format(time.RFC3339))
			}
			st.unreachable(err)
			t.Reset(s.nextRead())
			continue
		}
		if !st.reachable.Load() {
			s.log.Info("registry reachable again")
		}
		now := time.Now()
		s.names.Store(&regions)
		s.saveCopy(regions, now)
		st.read(now)
		if err := s.checkRegion(regions); err != nil {
			if !st.confirmed.Load() {
				stop := fmt.Errorf("generator: stopping: started from the copy of the regions at %s while the registry was down, and the registry now says: %w", st.copyPath, err)
				s.log.Error("the registry refuses the regions this generator started on: stopping", "error", stop.Error())
				st.fatal.Store(&stop)
				st.stop()
				return
			}
			if msg := err.Error(); msg != st.warned {
				st.warned = msg
				s.log.Error("registry: this generator's region changed; it issues on as before until stopped, and a new start will refuse",
					"region", s.region.Name, "region_number", s.region.Number, "error", msg)
			}
		} else {
			st.confirmed.Store(true)
			st.warned = ""
		}
		t.Reset(s.nextRead())
	}
}

func (s *Server) nextRead() time.Duration {
	if s.regState.reachable.Load() {
		return s.cfg.RegistryPoll
	}
	return min(s.cfg.RegistryPoll, registryRetry)
}

// registryMetrics returns the gauges of a registry URL (none without one).
func (s *Server) registryMetrics() []prometheus.Collector {
	if !s.cfg.RegistryIsURL() {
		return nil
	}
	st := &s.regState
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "idgen_generator_registry_reachable",
			Help: "1 when the generator's last read of the registry answered, 0 while it does not (the generator runs on the regions last read).",
		}, func() float64 {
			if st.reachable.Load() {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "idgen_generator_registry_read_timestamp_seconds",
			Help: "When the regions in use were last read from the registry (the copy's read_at), as a Unix time.",
		}, func() float64 { return float64(st.readAt.Load()) / 1000 }),
	}
}

// registryProblem returns /healthz's degraded detail while the registry does not answer, or "".
func (s *Server) registryProblem() string {
	st := &s.regState
	if !s.cfg.RegistryIsURL() || st.reachable.Load() {
		return ""
	}
	at := time.UnixMilli(st.readAt.Load())
	msg := fmt.Sprintf("the registry %s does not answer; issuing on the regions read from it at %s (%v ago)",
		s.cfg.Registry, at.UTC().Format(time.RFC3339), time.Since(at).Round(time.Second))
	if st.fromCopy && !st.confirmed.Load() {
		msg += ", started from the copy at " + st.copyPath
	}
	if st.copyPath != "" {
		msg += fmt.Sprintf("; a restart starts from that copy until it is older than %v", s.cfg.RegistryMaxAge)
	} else {
		msg += "; a restart fails until it answers (--registry-cache off)"
	}
	if e := st.lastErr.Load(); e != nil {
		msg += ": " + *e
	}
	return msg
}
