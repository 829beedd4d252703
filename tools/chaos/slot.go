package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/embedded/nodeout"
	"github.com/idgen/idgen/libs/localstack/proc"
)

// slot is one process slot: a generator or an embedded node, restarted in place after kill -9.
// Each start is a new incarnation with its own series.
type slot struct {
	name  string // group/name
	kind  string // "generator" or "node"
	bin   string
	args  []string
	url   string // generators: http://127.0.0.1:PORT
	logs  string // folder for the incarnations' logs
	clock string // the file holding its clock offset and estimated error (chaosclock)

	rec *recorder

	// mu is held shared by the generator's load loop for each request and exclusively while the
	// slot restarts, so no answer is credited to the wrong incarnation.
	mu   sync.RWMutex
	inc  int
	cur  *series
	p    *proc.Proc
	done chan struct{} // closed once the incarnation has ended and its output is read
}

// recorder holds every series of the run.
type recorder struct {
	mu  sync.Mutex
	all []*series
}

func (r *recorder) newSeries(slot string, inc int) *series {
	s := &series{name: fmt.Sprintf("%s#%d", slot, inc), slot: slot}
	r.mu.Lock()
	r.all = append(r.all, s)
	r.mu.Unlock()
	return s
}

func (r *recorder) series() []*series {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*series(nil), r.all...)
}

// start starts a new incarnation, its output (standard output and error) going to its log file;
// a node's is read as it comes (readNode) too. The caller holds mu exclusively, or no load loop
// runs yet.
func (p *slot) start() error {
	p.inc++
	p.cur = p.rec.newSeries(p.name, p.inc)
	spec := proc.Spec{Bin: p.bin, Args: p.args, Name: p.cur.name,
		Log: filepath.Join(p.logs, strings.ReplaceAll(p.cur.name, "/", "_")+".log")}
	var out *io.PipeWriter
	read := make(chan struct{})
	if p.kind == "node" {
		var in *io.PipeReader
		in, out = io.Pipe()
		spec.Output = out
		s, started := p.cur, time.Now()
		go func() {
			defer close(read)
			readNode(in, s, started)
			in.Close()
		}()
	} else {
		close(read)
	}
	pp, err := proc.Start(context.Background(), spec)
	if err != nil {
		if out != nil {
			out.Close()
		}
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = pp.Wait()
		if out != nil {
			out.Close()
		}
		<-read
	}()
	p.p, p.done = pp, done
	return nil
}

// readNode records the node's output (package nodeout): its batches, with the times nodeout.Scan
// gives for when each was asked for and received, and its refusals.
func readNode(out io.Reader, s *series, started time.Time) {
	_ = nodeout.Scan(out, started, func(l *nodeout.Line) {
		switch l.Kind {
		case nodeout.Batch:
			s.add(l.Asked, l.Received, l.Runs, l.FenceUnixMs)
		case nodeout.Refused:
			s.refuse(l.Received, l.Text)
		}
	})
}

// setClock moves the slot's clock by offset and has its clock discipline report esterr (written
// whole, by rename, so the process never reads half a file).
func (p *slot) setClock(offset, esterr time.Duration) error {
	tmp := p.clock + ".tmp"
	if err := os.WriteFile(tmp, []byte(offset.String()+" "+esterr.String()+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p.clock)
}

// signal sends sig to the current incarnation.
func (p *slot) signal(sig syscall.Signal) {
	p.mu.RLock()
	pp := p.p
	p.mu.RUnlock()
	if pp != nil {
		_ = pp.Signal(sig)
	}
}

// killRestart kills the current incarnation with SIGKILL, waits down, and starts a new one.
func (p *slot) killRestart(down time.Duration) error {
	p.signal(syscall.SIGKILL)
	p.mu.Lock()
	defer p.mu.Unlock()
	<-p.done
	time.Sleep(down)
	return p.start()
}

// hold stops the current incarnation gracefully (SIGTERM, as an operator stops a service; SIGKILL
// after 10 s) and keeps the slot stopped until resume starts a new incarnation.
func (p *slot) hold() {
	p.signal(syscall.SIGCONT)
	p.signal(syscall.SIGTERM)
	p.mu.Lock()
	_ = p.p.Stop()
	<-p.done
}

// resume starts a new incarnation of a held slot.
func (p *slot) resume() error {
	defer p.mu.Unlock()
	return p.start()
}

// stop ends the current incarnation with SIGTERM, then SIGKILL after 10 s.
func (p *slot) stop() {
	p.signal(syscall.SIGCONT)
	p.mu.RLock()
	pp, done := p.p, p.done
	p.mu.RUnlock()
	_ = pp.Stop()
	<-done
}

// load asks a generator for batches of count IDs until ctx ends, one request at a time, so the
// order the answers arrive in is the order the generator issued them, pausing after each answer.
func (p *slot) load(ctx context.Context, count int, pause time.Duration) {
	hc := &http.Client{Timeout: 2 * time.Second}
	body := fmt.Sprintf(`{"count":%d}`, count)
	buf := make([]byte, 0, 32<<10)
	var runs []nodeout.Run
	var lastHealth time.Time
	for ctx.Err() == nil {
		p.mu.RLock()
		s := p.cur
		var reason string
		buf, runs, reason = fetchBatch(ctx, hc, p.url, body, s, buf, runs)
		if reason == "" && time.Since(lastHealth) >= 100*time.Millisecond {
			lastHealth = time.Now()
			checkFence(ctx, hc, p.url, s, runs[len(runs)-1].Last())
		}
		p.mu.RUnlock()
		if ctx.Err() != nil {
			return
		}
		if reason != "" {
			s.refuse(time.Now(), reason)
			sleep(ctx, 20*time.Millisecond)
			continue
		}
		if pause > 0 {
			sleep(ctx, pause)
		}
	}
}

// fetchBatch asks for one batch and records it; it returns the refusal reason, "" on success.
func fetchBatch(ctx context.Context, hc *http.Client, url, body string, s *series, buf []byte, runs []nodeout.Run) ([]byte, []nodeout.Run, string) {
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/ids:batch", strings.NewReader(body))
	if err != nil {
		return buf, runs, "request"
	}
	req.Header.Set("Content-Type", "application/json")
	asked := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return buf, runs, "unreachable"
	}
	defer resp.Body.Close()
	buf, err = readAll(resp.Body, buf[:0])
	if err != nil {
		return buf, runs, "unreachable"
	}
	got := time.Now()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Reason string `json:"reason"`
		}
		if json.Unmarshal(buf, &e) == nil && e.Reason != "" {
			return buf, runs, e.Reason
		}
		return buf, runs, "http_" + strconv.Itoa(resp.StatusCode)
	}
	runs, ok := parseIDs(buf, runs[:0])
	if !ok || len(runs) == 0 {
		return buf, runs, "bad_answer"
	}
	s.add(asked, got, runs, 0)
	return buf, runs, ""
}

// checkFence reads the generator's /healthz after a batch and checks the batch's last ID against
// the fence of the lease it reports for the ID's machine number (its lease expiry minus the fence
// margin). A fence read after the batch is never below the one the ID was made under (a holder's
// fence only rises, and a number it holds again has a floor above its old expiry), so an ID at or
// past it is past its own.
func checkFence(ctx context.Context, hc *http.Client, url string, s *series, last idcore.ID) {
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/healthz", nil)
	if err != nil {
		return
	}
	resp, err := hc.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var h struct {
		Leases []struct {
			Layout      string `json:"layout"`
			Held        bool   `json:"held"`
			Machine     int    `json:"machine"`
			LeaseExpiry string `json:"lease_expiry"`
		} `json:"leases"`
	}
	if json.NewDecoder(resp.Body).Decode(&h) != nil {
		return
	}
	for _, l := range h.Leases {
		if l.Layout != "v2" || !l.Held || l.Machine != int(last>>10)&511 {
			continue
		}
		exp, err := time.Parse(time.RFC3339Nano, l.LeaseExpiry)
		if err != nil {
			continue
		}
		s.checkFence(last, exp.Add(-margin).UnixMilli())
	}
}

func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// parseIDs reads the generator's {"ids":["ID","ID",…]} into runs of consecutive IDs (nodeout.Run),
// without reflection: a batch of 1,000 IDs through encoding/json costs more than making them.
func parseIDs(b []byte, runs []nodeout.Run) ([]nodeout.Run, bool) {
	i := strings.Index(string(b), `"ids":[`)
	if i < 0 {
		return runs, false
	}
	i += len(`"ids":[`)
	for i < len(b) && b[i] != ']' {
		switch b[i] {
		case '"', ',', ' ':
			i++
			continue
		}
		var v int64
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			v = v*10 + int64(b[j]-'0')
			j++
		}
		if j == i {
			return runs, false
		}
		i = j
		if n := len(runs); n > 0 && runs[n-1].First+idcore.ID(runs[n-1].N) == idcore.ID(v) {
			runs[n-1].N++
		} else {
			runs = append(runs, nodeout.Run{First: idcore.ID(v), N: 1})
		}
	}
	return runs, i < len(b)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
