package dashboards_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idgen/idgen/dashboards"
	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// proc is a process the test started; it is stopped by pid when the test ends.
type proc struct {
	name string
	addr string // host:port it serves /metrics on
	cmd  *exec.Cmd
}

func start(t *testing.T, dir, name, addr string, bin string, args ...string) *proc {
	t.Helper()
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, addr: addr, cmd: cmd}
	t.Cleanup(func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			if len(b) > 3000 {
				b = b[len(b)-3000:]
			}
			t.Logf("%s log (tail):\n%s", name, b)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := testenv.WaitTCP(ctx, addr); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

func addr(t *testing.T) string { return fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)) }

// build compiles the services into dir.
func build(t *testing.T, dir string) {
	t.Helper()
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for name, pkg := range map[string]string{"registry": "./services/registry/cmd/registry", "generator": "./services/generator/cmd/generator",
		"public-id": "./services/public-id/cmd/public-id", "demo-orders": "./services/public-id/cmd/demo-orders"} {
		wg.Go(func() {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Sprintf("go build %s: %v\n%s", pkg, err, out)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

type promAPI struct{ base string }

// query runs an instant query and returns its vector or scalar result.
func (p promAPI) query(t *testing.T, q string) []struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
} {
	t.Helper()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	getJSON(t, p.base+"/api/v1/query?query="+url.QueryEscape(q), &r)
	if r.Status != "success" {
		t.Fatalf("query %q: %s", q, r.Error)
	}
	var out []struct {
		Metric map[string]string `json:"metric"`
		Value  []any             `json:"value"`
	}
	if r.Data.ResultType == "vector" {
		_ = json.Unmarshal(r.Data.Result, &out)
	} else if string(r.Data.Result) != "null" {
		out = make([]struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
		}, 1)
	}
	return out
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", u, err, b)
	}
}

type amAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Status      struct {
		State string `json:"state"`
	} `json:"status"`
}

// TestAlertsOnRealServers starts a local stack (registry, four generators, the public-ID service
// on Redis, the demo orders upstream, and a client), Prometheus with the rules (durations
// shortened) and Alertmanager, then checks the panels' queries return data, induces faults and
// waits for their alerts to reach Alertmanager.
func TestAlertsOnRealServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	for _, bin := range []string{"prometheus", "prometheus-alertmanager"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is missing: run make setup (apt-get install prometheus prometheus-alertmanager)", bin)
		}
	}
	began := time.Now()
	dir := t.TempDir()
	build(t, dir)
	bin := func(n string) string { return filepath.Join(dir, n) }

	dyn := testenv.StartDynalite(t, "")
	ctx := context.Background()
	db, err := dynamolease.NewClient(ctx, dyn.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := dynamolease.CreateTables(ctx, db, lease.TableV2, lease.TableHistory); err != nil {
		t.Fatal(err)
	}
	redis := testenv.StartRedis(t, dir)

	regAddr := addr(t)
	reg := start(t, dir, "registry", regAddr, bin("registry"), "--insecure-dev", "--listen", regAddr, "--store", "sqlite:"+filepath.Join(dir, "registry.db"))
	generator := func(name, region, store string, extra ...string) *proc {
		a := addr(t)
		return start(t, dir, name, a, bin("generator"), append([]string{"--insecure-dev", "--clock-check", "warn",
			"--registry", "http://" + regAddr, "--region", region, "--listen", a, "--lease-store", store}, extra...)...)
	}
	dynStore := "dynamodb:" + dyn.Endpoint
	// gen-a and gen-b: us-east-1 on the DynamoDB-compatible store; gen-b's default caller has a
	// quota of 5 IDs/s. gen-c: eu-west-1, the client's peer. gen-f: eu-west-1 with a 3 s lease, to
	// be frozen past its fence.
	genA := generator("gen-a", "us-east-1", dynStore, "--lease", "2m", "--renew", "1s", "--fence-margin", "5s")
	genB := generator("gen-b", "us-east-1", dynStore, "--lease", "2m", "--renew", "1s", "--fence-margin", "5s", "--dev-quota", "5")
	genC := generator("gen-c", "eu-west-1", "sqlite:"+filepath.Join(dir, "leases-eu-west-1.db"))
	genF := generator("gen-f", "eu-west-1", "sqlite:"+filepath.Join(dir, "leases-frozen.db"), "--lease", "3s", "--renew", "500ms", "--fence-margin", "500ms")
	// gen-t: us-east-1 with mutual TLS, its certificate an hour from expiry.
	genT := tlsGenerator(t, dir, bin("generator"), "http://"+regAddr, "us-east-1")

	pidAddr, gwAddr, ordersAddr := addr(t), addr(t), addr(t)
	root, _ := testenv.Root()
	routes, err := os.ReadFile(filepath.Join(root, "deploy/local/routes.json"))
	if err != nil {
		t.Fatal(err)
	}
	routesFile := filepath.Join(dir, "routes.json")
	if err := os.WriteFile(routesFile, bytes.ReplaceAll(routes, []byte("127.0.0.1:7005"), []byte(ordersAddr)), 0o644); err != nil {
		t.Fatal(err)
	}
	pid := start(t, dir, "public-id", pidAddr, bin("public-id"), "--insecure-dev", "--listen", pidAddr, "--gateway-listen", gwAddr,
		"--store", "redis:"+redis.Addr, "--routes", routesFile, "--resources", "ord,cus", "--rate-per-client", "0",
		"--redis-durability-check", "200ms")
	start(t, dir, "demo-orders", ordersAddr, bin("demo-orders"), "--listen", ordersAddr, "--db", filepath.Join(dir, "demo-orders.db"),
		"--generator", "http://"+genA.addr, "--public-ids", "http://"+pidAddr)

	// A calling service: the client library with gen-a local and gen-c its peer, its metrics
	// served for Prometheus.
	cl, err := idclient.New(idclient.Config{Endpoints: []string{"http://" + genA.addr, "http://" + genC.addr}, Batch: 100, ProbeEvery: 200 * time.Millisecond, CallTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	creg := prometheus.NewRegistry()
	creg.MustRegister(cl.Collectors()...)
	cln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	csrv := &http.Server{Handler: promhttp.HandlerFor(creg, promhttp.HandlerOpts{})}
	go func() { _ = csrv.Serve(cln) }()
	defer csrv.Close()

	// A checkout, so the gateway has an order to show.
	resp, err := http.Post("http://"+ordersAddr+"/internal/checkout", "application/json",
		strings.NewReader(`{"customer":"Ada","items":[{"sku":"book-1","quantity":2,"unit_cents":2100}]}`))
	if err != nil {
		t.Fatal(err)
	}
	co, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	order := regexp.MustCompile(`"order":"([^"]+)"`).FindStringSubmatch(string(co))
	if order == nil {
		t.Fatalf("checkout: %s", co)
	}

	// Load until the test ends.
	loadCtx, stopLoad := context.WithCancel(context.Background())
	var load sync.WaitGroup
	defer func() { stopLoad(); load.Wait() }()
	hc := &http.Client{Timeout: time.Second}
	every := func(d time.Duration, f func()) {
		load.Go(func() {
			tk := time.NewTicker(d)
			defer tk.Stop()
			for {
				select {
				case <-loadCtx.Done():
					return
				case <-tk.C:
					f()
				}
			}
		})
	}
	post := func(u, body string) {
		if r, err := hc.Post(u, "application/json", strings.NewReader(body)); err == nil {
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
	}
	for _, g := range []*proc{genA, genC, genF} {
		every(50*time.Millisecond, func() { post("http://"+g.addr+"/v1/ids:batch", `{"count": 5}`) })
	}
	// 5,000 IDs/s over a quota of 5/s (its burst is one full batch of 1,000).
	every(20*time.Millisecond, func() { post("http://"+genB.addr+"/v1/ids:batch", `{"count": 100}`) })
	every(50*time.Millisecond, func() {
		if r, err := hc.Get("http://" + gwAddr + "/orders/" + order[1]); err == nil {
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
	})
	every(10*time.Millisecond, func() {
		c, cancel := context.WithTimeout(loadCtx, time.Second)
		defer cancel()
		_, _ = cl.Next(c)
	})

	// Alertmanager and Prometheus, the rules' durations shortened to 2 s.
	amAddr, promAddr := addr(t), addr(t)
	if err := os.WriteFile(filepath.Join(dir, "alertmanager.yml"), []byte(
		"route: {receiver: default, group_wait: 1s, group_interval: 1s, repeat_interval: 1h}\nreceivers: [{name: default}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start(t, dir, "alertmanager", amAddr, "prometheus-alertmanager", "--config.file", filepath.Join(dir, "alertmanager.yml"),
		"--storage.path", filepath.Join(dir, "am"), "--web.listen-address", amAddr, "--cluster.listen-address", "")
	th, err := dashboards.LoadThresholds(thresholds)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := dashboards.RenderRules(th, dashboards.Options{For: "2s", RunbookBase: root + "/"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	target := func(p *proc, region string) string {
		return fmt.Sprintf("      - targets: [%q]\n        labels: {region: %q, name: %q}\n", p.addr, region, p.name)
	}
	cfg := "global: {scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s}\n" +
		"rule_files: [" + filepath.Join(dir, "rules.yml") + "]\n" +
		"alerting: {alertmanagers: [{static_configs: [{targets: [\"" + amAddr + "\"]}]}]}\n" +
		"scrape_configs:\n" +
		"  - job_name: idgen-generator\n    honor_labels: true\n    static_configs:\n" +
		target(genA, "us-east-1") + target(genB, "us-east-1") + target(genC, "eu-west-1") + target(genF, "eu-west-1") + target(genT, "us-east-1") +
		"  - job_name: idgen-registry\n    static_configs:\n" + target(reg, "global") +
		"  - job_name: idgen-public-id\n    static_configs:\n" + target(pid, "us-east-1") +
		"  - job_name: orders\n    static_configs:\n" + fmt.Sprintf("      - targets: [%q]\n        labels: {region: us-east-1}\n", cln.Addr().String())
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	start(t, dir, "prometheus", promAddr, "prometheus", "--config.file", filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path", filepath.Join(dir, "tsdb"), "--web.listen-address", promAddr, "--rules.alert.resend-delay", "1s")
	prom := promAPI{"http://" + promAddr}
	waitFor(t, 30*time.Second, "Prometheus ready", func() bool {
		r, err := http.Get(prom.base + "/-/ready")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	})

	// Every target up, and a few seconds of samples for the rates.
	waitFor(t, 30*time.Second, "every target up", func() bool {
		up := prom.query(t, `up`)
		n := 0
		for _, u := range up {
			if u.Value[1] == "1" {
				n++
			}
		}
		if n < 8 && time.Since(began) > 40*time.Second {
			t.Logf("up: %v", up)
		}
		return n == 8
	})
	time.Sleep(6 * time.Second)
	t.Logf("stack up and scraped after %v", time.Since(began).Round(time.Second))

	// What each service exports passes promtool's checks of names, help and units.
	for _, p := range []*proc{genA, genT, reg, pid} {
		resp, err := http.Get("http://" + p.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("promtool", "check", "metrics")
		cmd.Stdin = resp.Body
		out, err := cmd.CombinedOutput()
		resp.Body.Close()
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("promtool check metrics on %s: %v\n%s", p.name, err, out)
		}
	}

	// Before any fault: the alerts the faults will raise are quiet.
	for _, a := range prom.query(t, `ALERTS{alertstate="firing"}`) {
		switch a.Metric["alertname"] {
		case "IdgenGeneratorDown", "IdgenLeaseRenewalsFailing", "IdgenLeaseStoreErrors", "IdgenClientOnPeerRegion", "IdgenGatewayStoreUnavailable", "IdgenPublicIDStoreVolatile":
			t.Errorf("%s fires before any fault: %v", a.Metric["alertname"], a.Metric)
		}
	}

	// Every panel's query returns data (region us-east-1, where the quota and the client are).
	ruleQs, panelQs := queries(t, "us-east-1", "10s")
	for what, q := range panelQs {
		if len(prom.query(t, q)) == 0 {
			t.Errorf("panel %s: no data for %s", what, q)
		}
	}

	// The faults. First the public-ID store turns volatile while the service runs, seen at its
	// next reading of the store's persistence (and kept when Redis is killed below: a reading
	// Redis does not answer keeps the last one).
	faults := time.Now()
	if out, err := exec.Command("redis-cli", "-p", fmt.Sprint(redis.Port), "CONFIG", "SET", "appendonly", "no").CombinedOutput(); err != nil {
		t.Fatalf("redis-cli CONFIG SET appendonly no: %v %s", err, out)
	}
	waitFor(t, 10*time.Second, "the public-ID service to find its store volatile", func() bool {
		r, err := http.Get("http://" + pid.addr + "/metrics")
		if err != nil {
			return false
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return regexp.MustCompile(`(?m)^idgen_publicid_store_volatile(\{[^}]*\})? 1$`).Match(b)
	})
	_ = syscall.Kill(genF.cmd.Process.Pid, syscall.SIGSTOP) // frozen past its 3 s lease
	_ = genA.cmd.Process.Signal(syscall.SIGKILL)            // a generator dies; the client moves to its peer
	dyn.Stop()                                              // the lease store goes away
	redis.Kill()                                            // the public-ID store goes away
	time.Sleep(4500 * time.Millisecond)
	_ = syscall.Kill(genF.cmd.Process.Pid, syscall.SIGCONT)

	want := map[string]map[string]string{
		"IdgenGeneratorDown":           {"instance": genA.addr},
		"IdgenLeaseRenewalsFailing":    {"instance": genF.addr},
		"IdgenLeaseStoreErrors":        {"instance": genB.addr},
		"IdgenQuotaRejections":         {"region": "us-east-1", "caller": "dev"},
		"IdgenClientOnPeerRegion":      {"job": "orders"},
		"IdgenGatewayStoreUnavailable": {"instance": pid.addr},
		"IdgenPublicIDStoreVolatile":   {"instance": pid.addr},
		"IdgenClockCheckWarnMode":      {"instance": genB.addr},
	}
	// Not a fault: gen-t's certificate expires within the hour.
	for _, name := range []string{"IdgenTLSCertificateExpiringSoon", "IdgenTLSCertificateExpiryImminent"} {
		want[name] = map[string]string{"instance": genT.addr, "kind": "server"}
	}
	var got []amAlert
	waitFor(t, 60*time.Second, "the induced alerts in Alertmanager", func() bool {
		getJSON(t, "http://"+amAddr+"/api/v2/alerts?active=true", &got)
		for name, labels := range want {
			if !slices.ContainsFunc(got, func(a amAlert) bool { return a.Labels["alertname"] == name && matches(a.Labels, labels) }) {
				return false
			}
		}
		return true
	})
	t.Logf("induced alerts reached Alertmanager %v after the faults began", time.Since(faults).Round(time.Second))
	for _, a := range got {
		if want[a.Labels["alertname"]] == nil {
			continue
		}
		u := a.Annotations["runbook_url"]
		if _, err := os.Stat(u); err != nil || !strings.HasSuffix(u, "/runbooks/alerts/"+a.Labels["alertname"]+".md") {
			t.Errorf("%s: runbook_url %q: %v", a.Labels["alertname"], u, err)
		}
		if a.Labels["severity"] == "" || a.Annotations["summary"] == "" {
			t.Errorf("%s: no severity or summary: %v %v", a.Labels["alertname"], a.Labels, a.Annotations)
		}
	}

	// Every metric a rule or a panel names is one the processes exported (Prometheus scraped it).
	var names struct {
		Data []string `json:"data"`
	}
	getJSON(t, prom.base+"/api/v1/label/__name__/values", &names)
	exported := map[string]bool{"up": true} // Prometheus' own, per target
	for _, n := range names.Data {
		exported[n] = true
	}
	for what, q := range ruleQs {
		for _, n := range metricNames(t, what, q) {
			if !exported[n] {
				t.Errorf("rule %s: metric %s is exported by no process", what, n)
			}
		}
	}
	for what, q := range panelQs {
		for _, n := range metricNames(t, what, q) {
			if !exported[n] {
				t.Errorf("panel %s: metric %s is exported by no process", what, n)
			}
		}
	}
	t.Logf("done after %v", time.Since(began).Round(time.Second))
}

func matches(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	testenv.Eventually(t, d, func() (bool, string) { return ok(), what })
}
