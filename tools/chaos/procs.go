package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idgen/idgen/libs/idcore"
)

// proc is one process slot: a generator or an idproc, restarted in place after kill -9. Each
// start is a new incarnation with its own series.
type proc struct {
	slot string // group/name
	kind string // "generator" or "idproc"
	bin  string
	args []string
	url  string // generators: http://127.0.0.1:PORT
	logs string // folder for stderr logs

	rec *recorder

	// mu is held shared by the generator's load loop for each request and exclusively while the
	// slot restarts, so no answer is credited to the wrong incarnation.
	mu   sync.RWMutex
	inc  int
	cur  *series
	cmd  *exec.Cmd
	done chan struct{}
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

// start starts a new incarnation. The caller holds mu exclusively, or no load loop runs yet.
func (p *proc) start() error {
	p.inc++
	p.cur = p.rec.newSeries(p.slot, p.inc)
	logf, err := os.Create(filepath.Join(p.logs, strings.ReplaceAll(p.cur.name, "/", "_")+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = logf
	var out io.ReadCloser
	if p.kind == "idproc" {
		if out, err = cmd.StdoutPipe(); err != nil {
			logf.Close()
			return err
		}
	} else {
		cmd.Stdout = logf
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	s := p.cur
	go func() {
		defer close(done)
		if out != nil {
			readIdproc(out, s)
		}
		_ = cmd.Wait()
		logf.Close()
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// readIdproc records idproc's output: "ids ID …" lines and "refused REASON" lines.
func readIdproc(out io.Reader, s *series) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ids []idcore.ID
	for sc.Scan() {
		now := time.Now()
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "ids":
			ids = ids[:0]
			ok := true
			for f := range strings.FieldsSeq(rest) {
				v, err := strconv.ParseInt(f, 10, 64)
				if err != nil {
					ok = false // a line cut short by kill -9: never delivered
					break
				}
				ids = append(ids, idcore.ID(v))
			}
			if ok && len(ids) > 0 {
				s.add(now, ids)
			}
		case "refused":
			s.refuse(now, rest)
		}
	}
}

// signal sends sig to the current incarnation.
func (p *proc) signal(sig syscall.Signal) {
	p.mu.RLock()
	cmd := p.cmd
	p.mu.RUnlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(sig)
	}
}

// killRestart kills the current incarnation with SIGKILL, waits down, and starts a new one.
func (p *proc) killRestart(down time.Duration) error {
	p.signal(syscall.SIGKILL)
	p.mu.Lock()
	defer p.mu.Unlock()
	<-p.done
	time.Sleep(down)
	return p.start()
}

// stop ends the current incarnation with SIGTERM, then SIGKILL after 10 s.
func (p *proc) stop() {
	p.signal(syscall.SIGCONT)
	p.signal(syscall.SIGTERM)
	p.mu.RLock()
	done := p.done
	p.mu.RUnlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.signal(syscall.SIGKILL)
		<-done
	}
}

// load asks a generator for batches of count IDs until ctx ends, one request at a time, so the
// order the answers arrive in is the order the generator issued them.
func (p *proc) load(ctx context.Context, count int) {
	hc := &http.Client{Timeout: 2 * time.Second}
	body := fmt.Sprintf(`{"count":%d}`, count)
	for ctx.Err() == nil {
		p.mu.RLock()
		s := p.cur
		ok, reason := fetchBatch(ctx, hc, p.url, body, s)
		p.mu.RUnlock()
		if ctx.Err() != nil {
			return
		}
		if !ok {
			s.refuse(time.Now(), reason)
			sleep(ctx, 20*time.Millisecond)
			continue
		}
		sleep(ctx, 10*time.Millisecond)
	}
}

func fetchBatch(ctx context.Context, hc *http.Client, url, body string, s *series) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/v1/ids:batch", strings.NewReader(body))
	if err != nil {
		return false, "request"
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return false, "unreachable"
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, "unreachable"
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Reason string `json:"reason"`
		}
		if json.Unmarshal(b, &e) == nil && e.Reason != "" {
			return false, e.Reason
		}
		return false, "http_" + strconv.Itoa(resp.StatusCode)
	}
	var out struct {
		IDs []idcore.ID `json:"ids"`
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.IDs) == 0 {
		return false, "bad_answer"
	}
	s.add(time.Now(), out.IDs)
	return true, ""
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// dynalite is the DynamoDB-compatible lease store, keeping its data in a folder so it survives
// kill -9.
type dynalite struct {
	root, dir, endpoint string
	port                int
	cmd                 *exec.Cmd
	log                 *os.File
}

func (d *dynalite) start() error {
	cli := filepath.Join(d.root, "node_modules", "dynalite", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		return fmt.Errorf("%s is missing: run `make setup` first", cli)
	}
	cmd := exec.Command("node", cli, "--port", strconv.Itoa(d.port), "--host", "127.0.0.1", "--path", d.dir,
		"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = d.log, d.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start dynalite: %w", err)
	}
	d.cmd = cmd
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", d.port), 200*time.Millisecond)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dynalite did not listen within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// signal sends sig to dynalite's process group.
func (d *dynalite) signal(sig syscall.Signal) {
	if d.cmd != nil && d.cmd.Process != nil {
		_ = syscall.Kill(-d.cmd.Process.Pid, sig)
	}
}

func (d *dynalite) kill() {
	d.signal(syscall.SIGKILL)
	if d.cmd != nil {
		_ = d.cmd.Wait()
	}
	d.cmd = nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
