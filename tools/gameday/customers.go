package gameday

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idgen/idgen/libs/localstack/cmdline"
	"github.com/idgen/idgen/libs/localstack/dynalite"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/topology"
	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
	"github.com/idgen/idgen/services/public-id/mapping/regions"
)

// custRegion is one region's public-ID side: its store of record (dynalite), its internal API
// and gateway on --store regions:FILE, the order service behind the gateway, the proxies its
// processes reach the other regions' stores through, and its customer client.
type custRegion struct {
	name   string
	number int
	peer   string // the topology's

	storePort, apiPort, gwPort, opsPort int
	store, api, gw, client              *proc.Proc
	starts                              int // incarnations of the processes (a lost region's come back as the next)
	file, routes                        string
	upstream                            *http.Server
	upstreamURL                         string
	proxies                             map[string]*proxy // to each other region's store, for this region's processes
}

func (r *custRegion) apiURL() string { return fmt.Sprintf("http://127.0.0.1:%d", r.apiPort) }
func (r *custRegion) gwURL() string  { return fmt.Sprintf("http://127.0.0.1:%d", r.gwPort) }
func (r *custRegion) storeURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d", r.storePort)
}

// customers is the public-ID side of the run.
type customers struct {
	names   []string // by region number
	regions map[string]*custRegion
	rec     *custRecorder
}

// custEvent is one line of a customer client: an acknowledged publish ('a'), a refused one
// ('p'), a resolve at a gateway ('r') or a failed call to Next ('n').
type custEvent struct {
	Kind     byte
	At       time.Time // the request ended
	Dur      time.Duration
	From, To string // the client's region; the region asked (its own API for a publish)
	Status   int
	Internal string
	Public   string
	Why      string
}

type custRecorder struct {
	mu     sync.Mutex
	events []custEvent
	acked  map[string]string // public ID → internal ID
}

func (c *custRecorder) add(e custEvent) {
	c.mu.Lock()
	c.events = append(c.events, e)
	if e.Kind == 'a' {
		c.acked[e.Public] = e.Internal
	}
	c.mu.Unlock()
}

func (c *custRecorder) snapshot() ([]custEvent, map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	acked := make(map[string]string, len(c.acked))
	for k, v := range c.acked {
		acked[k] = v
	}
	return slices.Clone(c.events), acked
}

// setupCustomers checks the scenario's customer regions against the topology and lays out their
// ports: every region's numbers and peers are the topology's.
func setupCustomers(sc *Scenario, tp *topology.Topology) (*customers, error) {
	c := &customers{regions: map[string]*custRegion{}, rec: &custRecorder{acked: map[string]string{}}}
	for _, n := range sc.Customers.Regions {
		tr, ok := tp.Regions[n]
		if !ok {
			return nil, fmt.Errorf("gameday: customers: region %s is not in the topology", n)
		}
		if !slices.Contains(sc.Customers.Regions, tr.Peer) {
			return nil, fmt.Errorf("gameday: customers: %s's peer %s (the topology's) does not run customers: add it to the customers' regions", n, tr.Peer)
		}
		r := &custRegion{name: n, number: tr.Number, peer: tr.Peer, proxies: map[string]*proxy{}}
		for _, port := range []*int{&r.storePort, &r.apiPort, &r.gwPort, &r.opsPort} {
			p, err := proc.PickPort()
			if err != nil {
				return nil, err
			}
			*port = p
		}
		c.regions[n] = r
		c.names = append(c.names, n)
	}
	slices.SortFunc(c.names, func(a, b string) int { return c.regions[a].number - c.regions[b].number })
	return c, nil
}

// startCustomers starts every customer region's store, proxies, order service, internal API and
// gateway, then the customer clients.
func (s *stack) startCustomers(ctx context.Context, clientConfig string) error {
	c := s.cust
	for _, n := range c.names {
		r := c.regions[n]
		for _, m := range c.names {
			if m == n {
				continue
			}
			px, err := newProxy(c.regions[m].storeURL()[len("http://"):])
			if err != nil {
				return err
			}
			r.proxies[m] = px
		}
		if err := s.writeRegionsFile(r); err != nil {
			return err
		}
		if err := s.startUpstream(r); err != nil {
			return err
		}
	}
	if err := c.each(func(r *custRegion) error { return s.startPublicStore(ctx, r) }); err != nil {
		return err
	}
	if err := c.each(func(r *custRegion) error { return s.startPublicProcs(ctx, r) }); err != nil {
		return err
	}
	return c.each(func(r *custRegion) error { return s.startCustomer(ctx, r, clientConfig) })
}

func (c *customers) each(f func(r *custRegion) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(c.names))
	for i, n := range c.names {
		wg.Go(func() {
			if err := f(c.regions[n]); err != nil {
				errs[i] = fmt.Errorf("%s: %w", n, err)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// writeRegionsFile writes the regions file of r's processes: every customer region with the
// topology's number and peer, its own store directly and every other's through r's proxy to it.
func (s *stack) writeRegionsFile(r *custRegion) error {
	f := regions.File{Region: r.name}
	for _, n := range s.cust.names {
		o := s.cust.regions[n]
		ep := o.storeURL()
		if n != r.name {
			ep = "http://" + r.proxies[n].addr()
		}
		f.Regions = append(f.Regions, regions.FileRegion{Name: n, Number: o.number, Peer: o.peer, Endpoint: ep})
	}
	r.file = filepath.Join(s.dir, "public-id", r.name+"-regions.json")
	if err := os.MkdirAll(filepath.Dir(r.file), 0o755); err != nil {
		return err
	}
	return f.WriteFile(r.file)
}

// startUpstream starts r's order service (GET /internal/order/{internal_id} answers the order
// with that ID) and writes its gateway's route file.
func (s *stack) startUpstream(r *custRegion) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	r.upstreamURL = "http://" + l.Addr().String()
	r.upstream = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id, ok := strings.CutPrefix(req.URL.Path, "/internal/order/")
		if !ok || id == "" {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"note":"ok"}`, id)
	})}
	go func() { _ = r.upstream.Serve(l) }()
	routes := map[string]any{"routes": []any{map[string]any{
		"name": "order", "public": "/order/{public_id}", "upstream": r.upstreamURL + "/internal/order/{internal_id}", "resource": "ord",
		"response": map[string]any{"type": "object", "fields": map[string]any{"id": "id:ord", "note": "string"}},
	}}}
	b, err := json.MarshalIndent(routes, "", "  ")
	if err != nil {
		return err
	}
	r.routes = filepath.Join(s.dir, "public-id", r.name+"-routes.json")
	return os.WriteFile(r.routes, b, 0o644)
}

// startDynalite starts a dynalite (libs/localstack/dynalite, in memory) on port, its log in the
// game day's logs, and makes its tables.
func (s *stack) startDynalite(ctx context.Context, name string, port int, tables ...dynalite.Tables) (*proc.Proc, error) {
	d, err := dynalite.Start(ctx, dynalite.Options{Port: port, Name: name, Log: filepath.Join(s.logs, name+".log"), Tables: tables})
	if err != nil {
		return nil, err
	}
	return d.Proc(), nil
}

// startPublicStore starts r's store of record, empty (in memory), and makes its table.
func (s *stack) startPublicStore(ctx context.Context, r *custRegion) error {
	name := "public-store-" + r.name
	if r.starts > 0 {
		name = fmt.Sprintf("%s-%d", name, r.starts+1)
	}
	p, err := s.startDynalite(ctx, name, r.storePort, dynamomap.Tables(dynamomap.DefaultTable))
	if err != nil {
		return err
	}
	r.store = p
	return nil
}

func (r *custRegion) procName(what string) string {
	if r.starts > 0 {
		return fmt.Sprintf("%s-%s-%d", what, r.name, r.starts+1)
	}
	return what + "-" + r.name
}

// startAPI starts r's internal API; it is healthy once its region is filled.
func (s *stack) startAPI(ctx context.Context, r *custRegion) error {
	p, err := s.start(ctx, proc.Spec{Name: r.procName("public-id"), Bin: s.bins["public-id"], HealthURL: r.apiURL() + "/healthz",
		Args: cmdline.PublicID{Listen: fmt.Sprintf("127.0.0.1:%d", r.apiPort), Store: "regions:" + r.file, Resources: "ord",
			Extra: []string{"--store-timeout", "1s", "--deregistration-delay", "0"}}.Args()})
	if err != nil {
		return err
	}
	r.api = p
	return nil
}

// startGateway starts r's customer gateway (after its internal API).
func (s *stack) startGateway(ctx context.Context, r *custRegion) error {
	p, err := s.start(ctx, proc.Spec{Name: r.procName("gateway"), Bin: s.bins["public-id-gateway"], HealthURL: r.gwURL() + "/healthz",
		Args: cmdline.Gateway{Listen: fmt.Sprintf("127.0.0.1:%d", r.gwPort), MetricsListen: fmt.Sprintf("127.0.0.1:%d", r.opsPort),
			Store: "regions:" + r.file, Routes: r.routes, DeregistrationDelay: "0",
			Extra: []string{"--rate-per-client", "0", "--store-timeout", "1s"}}.Args()})
	if err != nil {
		return err
	}
	r.gw = p
	return nil
}

func (s *stack) startPublicProcs(ctx context.Context, r *custRegion) error {
	if err := s.startAPI(ctx, r); err != nil {
		return err
	}
	return s.startGateway(ctx, r)
}

// startCustomer starts r's customer client: IDs from the region's generators through the
// client config, published through r's internal API, opened at every region's gateway (r's
// first).
func (s *stack) startCustomer(ctx context.Context, r *custRegion, clientConfig string) error {
	gws := []string{r.name + "=" + r.gwURL()}
	for _, n := range s.cust.names {
		if n != r.name {
			gws = append(gws, n+"="+s.cust.regions[n].gwURL())
		}
	}
	pr, pw := io.Pipe()
	name := "customer-" + r.name
	p, err := proc.Start(ctx, proc.Spec{Name: name, Bin: s.bins["customer"], Log: filepath.Join(s.logs, name+".log"), Output: pw,
		Args: []string{"--client-config", clientConfig, "--region", r.name, "--api", r.apiURL(), "--gateways", strings.Join(gws, ","),
			"--rate", strconv.FormatFloat(s.sc.Customers.Rate, 'f', -1, 64)}})
	if err != nil {
		return err
	}
	r.client = p
	first := make(chan struct{})
	var once sync.Once
	go func() {
		scanCustomer(pr, r.name, s.cust.rec, func() { once.Do(func() { close(first) }) })
	}()
	go func() { _ = p.Wait(); pw.Close() }()
	select {
	case <-first:
		return nil
	case <-p.Done():
		return fmt.Errorf("gameday: %s exited before a publish was acknowledged: %s", name, p.Tail(20))
	case <-time.After(60 * time.Second):
		return fmt.Errorf("gameday: %s had no publish acknowledged within 60 s: %s", name, p.Tail(20))
	}
}

// scanCustomer reads a customer client's output (cmd/customer); first is called at its first
// acknowledged publish.
func scanCustomer(rd io.Reader, from string, rec *custRecorder, first func()) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		f := strings.SplitN(rest, " ", 7)
		at := func(i int) (time.Time, bool) {
			if len(f) <= i {
				return time.Time{}, false
			}
			us, err := strconv.ParseInt(f[i], 10, 64)
			return time.UnixMicro(us), err == nil
		}
		dur := func(i int) time.Duration {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			return time.Duration(v) * time.Millisecond
		}
		t, ok := at(0)
		if !ok {
			continue
		}
		switch {
		case kind == "ack" && len(f) >= 4:
			rec.add(custEvent{Kind: 'a', At: t, Dur: dur(1), From: from, To: from, Status: 200, Internal: f[2], Public: f[3]})
			first()
		case kind == "publish" && len(f) >= 4:
			st, _ := strconv.Atoi(f[2])
			why := strings.Join(f[4:], " ")
			rec.add(custEvent{Kind: 'p', At: t, Dur: dur(1), From: from, To: from, Status: st, Internal: f[3], Why: why})
		case kind == "resolve" && len(f) >= 5:
			st, _ := strconv.Atoi(f[3])
			why := strings.Join(f[5:], " ")
			rec.add(custEvent{Kind: 'r', At: t, Dur: dur(1), From: from, To: f[2], Status: st, Public: f[4], Why: why})
		case kind == "next":
			rec.add(custEvent{Kind: 'n', At: t, From: from, To: from, Why: strings.Join(f[1:], " ")})
		}
	}
}

// runCustomerPhase does a public-id-* fault to its region and brings it back.
func (s *stack) runCustomerPhase(ctx context.Context, p *phaseRun) error {
	r := s.cust.regions[p.Region]
	peer := s.cust.regions[r.peer]
	p.FaultAt = time.Now()
	switch p.Fault {
	case PublicIDLost:
		_ = r.gw.Kill()
		_ = r.api.Kill()
		_ = r.store.Kill() // in memory: its data goes with it
	case PublicIDFreeze:
		if err := r.store.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
	case PublicIDPartition:
		r.proxies[peer.name].setCut(true)
		peer.proxies[r.name].setCut(true)
	}
	if err := sleep(ctx, p.Hold.D()); err != nil {
		return err
	}
	p.RestoreAt = time.Now()
	switch p.Fault {
	case PublicIDLost:
		if err := s.returnEmpty(ctx, p, r); err != nil {
			return err
		}
	case PublicIDFreeze:
		if err := r.store.Signal(syscall.SIGCONT); err != nil {
			return err
		}
	case PublicIDPartition:
		r.proxies[peer.name].setCut(false)
		peer.proxies[r.name].setCut(false)
	}
	p.HealthyAt = time.Now()
	if p.ReadyAt.IsZero() {
		p.ReadyAt = p.HealthyAt
	}
	return sleep(ctx, max(0, p.Settle.D()-time.Since(p.RestoreAt)))
}

// returnEmpty brings a lost region back empty: a new store with the table made again and new
// processes; its internal API answers /healthz 503 region_filling until it has filled the region
// from the others, and only then is its gateway started and the region takes customers again
// (ReadyAt). Every public ID acknowledged so far is then asked of it (BackChecked, BackMissing).
func (s *stack) returnEmpty(ctx context.Context, p *phaseRun, r *custRegion) error {
	r.starts++
	if err := s.startPublicStore(ctx, r); err != nil {
		return err
	}
	stopPoll := make(chan struct{})
	polled := make(chan struct{})
	go func() { // what its /healthz says while it fills
		defer close(polled)
		hc := &http.Client{Timeout: time.Second}
		for {
			select {
			case <-stopPoll:
				return
			case <-time.After(50 * time.Millisecond):
			}
			resp, err := hc.Get(r.apiURL() + "/healthz")
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(b), "region_filling") && p.FillingSeenAt.IsZero() {
				p.FillingSeenAt = time.Now()
			}
		}
	}()
	err := s.startAPI(ctx, r)
	close(stopPoll)
	<-polled
	if err != nil {
		return err
	}
	p.FilledAt = time.Now()
	if err := s.startGateway(ctx, r); err != nil {
		return err
	}
	p.ReadyAt = time.Now()
	_, acked := s.cust.rec.snapshot()
	p.BackChecked, p.BackMissing = checkAll(acked, []*custRegion{r})
	return nil
}

// checkAll asks every region of rs's internal API for every acknowledged public ID and returns
// how many it asked and the answers that were not its internal ID (each naming the region).
func checkAll(acked map[string]string, rs []*custRegion) (int, []string) {
	type job struct {
		r        *custRegion
		pub, int string
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var missing []string
	asked := 0
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	for range 16 {
		wg.Go(func() {
			for j := range jobs {
				got, err := resolveInternal(hc, j.r.apiURL(), j.pub)
				mu.Lock()
				asked++
				if err != nil || got != j.int {
					if err == nil {
						err = fmt.Errorf("internal ID %s, want %s", got, j.int)
					}
					missing = append(missing, fmt.Sprintf("%s in %s: %v", j.pub, j.r.name, err))
				}
				mu.Unlock()
			}
		})
	}
	for _, r := range rs {
		for pub, in := range acked {
			jobs <- job{r, pub, in}
		}
	}
	close(jobs)
	wg.Wait()
	slices.Sort(missing)
	return asked, missing
}

// resolveInternal is GET /v1/public-ids/{public_id} at an internal API: the internal ID.
func resolveInternal(hc *http.Client, api, pub string) (string, error) {
	var last error
	// An answer that is neither 200 nor 404 (a store that has not answered yet) is asked again for
	// up to 10 s: the check is of what the stores hold, a 404 at once.
	for attempt := range 20 {
		if attempt > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		resp, err := hc.Get(api + "/v1/public-ids/" + pub)
		if err != nil {
			last = err
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return "", fmt.Errorf("404 %s", strings.TrimSpace(string(b)))
		}
		if resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
			continue
		}
		var body struct {
			InternalID string `json:"internal_id"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			return "", err
		}
		return body.InternalID, nil
	}
	return "", last
}

// exited names every public-ID process that ended by itself (a store, internal API, gateway or
// customer not stopped by a fault), with its last log line: each is a failed check.
func (c *customers) exited() []string {
	var out []string
	for _, n := range c.names {
		r := c.regions[n]
		for _, p := range []*proc.Proc{r.store, r.api, r.gw, r.client} {
			if p != nil && p.Exited() {
				out = append(out, fmt.Sprintf("%s ended by itself during the run: %s", p.Name(), lastLine(p.Tail(5))))
			}
		}
	}
	return out
}

// stopCustomerClients stops the customer clients (they record to the end).
func (s *stack) stopCustomerClients() {
	if s.cust == nil {
		return
	}
	_ = s.cust.each(func(r *custRegion) error {
		if r.client != nil {
			_ = r.client.Stop()
		}
		return nil
	})
}

// stopPublicSide stops every region's gateway, internal API, store, proxies and order service.
func (s *stack) stopPublicSide() {
	if s.cust == nil {
		return
	}
	_ = s.cust.each(func(r *custRegion) error {
		for _, p := range []*proc.Proc{r.gw, r.api} {
			if p != nil {
				_ = p.Stop()
			}
		}
		if r.store != nil {
			_ = r.store.Signal(syscall.SIGCONT)
			_ = r.store.Stop()
		}
		for _, px := range r.proxies {
			px.close()
		}
		if r.upstream != nil {
			_ = r.upstream.Close()
		}
		return nil
	})
}

// proxy is a TCP link from one region's public-ID processes to another region's store, which a
// partition cuts: its connections are closed, and new ones are accepted and left unanswered
// (as a network that drops packets) until it is healed.
type proxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
	held   []net.Conn
}

func newProxy(target string) (*proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	return p, nil
}

func (p *proxy) addr() string { return p.l.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.held = append(p.held, c)
			p.mu.Unlock()
			continue
		}
		p.mu.Unlock()
		go p.pipe(c)
	}
}

func (p *proxy) pipe(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// setCut cuts the link (its connections closed, new ones held unanswered) or heals it (the held
// ones closed: their callers dial again).
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		return
	}
	for _, c := range p.held {
		c.Close()
	}
	p.held = nil
}

func (p *proxy) close() {
	p.l.Close()
	p.setCut(true)
	p.setCut(false)
}
