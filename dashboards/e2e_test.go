package dashboards_test

import (
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
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idgen/idgen/dashboards"
	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/localstack"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
	"github.com/idgen/idgen/services/public-id/mapping/regions"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func addr(t *testing.T) string { return fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)) }

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
// on Redis, the demo orders upstream, and a client), a public-ID service on the cross-region
// store (two regions, a dynalite each), Prometheus with the rules (durations
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

	dyn := testenv.StartDynaliteWithTables(t, "", dynamolease.Tables(lease.TableV2, lease.TableHistory))
	redis := testenv.StartRedis(t, dir)

	// The local stack with four generators and one on mutual TLS. gen-a and gen-b: us-east-1 on
	// the DynamoDB-compatible store; gen-b's default caller has a quota of 5 IDs/s. gen-c:
	// eu-west-1, the client's peer. gen-f: eu-west-1 with a 3 s lease, to be frozen past its
	// fence. gen-t: us-east-1 with mutual TLS, its certificate an hour from expiry. The public-ID
	// service on Redis, reading its persistence every 200 ms; the demo orders in us-east-1, on gen-a
	// (its region's first generator in the client config written from the topology), then gen-c.
	dynStore := "dynamodb:" + dyn.Endpoint
	// gen-b reads the registry every second, to see it killed at once; the copies of the regions
	// of gen-a and gen-b (no SQLite lease store to keep them beside) are kept in dir.
	copyOf := func(name string) []string {
		return []string{"--registry-cache", filepath.Join(dir, "regions-"+name+".json")}
	}
	ls := localstack.StartT(t, localstack.Options{State: dir, Generators: []localstack.Generator{
		{Name: "gen-a", Region: "us-east-1", LeaseStore: dynStore, Args: append(copyOf("gen-a"), "--lease", "2m", "--renew", "1s", "--fence-margin", "5s")},
		{Name: "gen-b", Region: "us-east-1", LeaseStore: dynStore, Args: append(copyOf("gen-b"), "--lease", "2m", "--renew", "1s", "--fence-margin", "5s", "--dev-quota", "5", "--registry-refresh", "1s")},
		{Name: "gen-c", Region: "eu-west-1"},
		{Name: "gen-f", Region: "eu-west-1", LeaseStore: "sqlite:" + filepath.Join(dir, "leases-frozen.db"), Args: []string{"--lease", "3s", "--renew", "500ms", "--fence-margin", "500ms"}},
		tlsGenerator(t, dir, "us-east-1"),
	}, PublicIDStore: "redis:" + redis.Addr, PublicIDArgs: []string{"--redis-durability-check", "200ms"},
		GatewayArgs: []string{"--rate-per-client", "0", "--redis-durability-check", "200ms"}},
		localstack.StartOptions{})
	svc := ls.Service
	genA, genB, genC, genF, genT := svc("gen-a"), svc("gen-b"), svc("gen-c"), svc("gen-f"), svc("gen-t")
	reg, pid, gws := svc("registry"), svc("public-id"), svc("public-id-gateway")
	gwAddr, ordersAddr := localstack.GatewayAddr(ls.Services), svc("demo-orders").Addr
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}

	// The public-ID internal API of us-east-1 on the cross-region store: us-east-1 and its peer
	// eu-west-1, each region's table on its own dynalite, so that eu-west-1's can be lost.
	stores := map[string]*testenv.Dynalite{}
	rf := regions.File{Region: "us-east-1"}
	for i, n := range []string{"us-east-1", "eu-west-1"} {
		d := testenv.StartDynaliteWithTables(t, "", dynamomap.Tables(dynamomap.DefaultTable))
		stores[n] = d
		rf.Regions = append(rf.Regions, regions.FileRegion{Name: n, Number: i + 1, Peer: map[string]string{"us-east-1": "eu-west-1", "eu-west-1": "us-east-1"}[n], Endpoint: d.Endpoint})
	}
	if err := rf.WriteFile(filepath.Join(dir, "regions-store.json")); err != nil {
		t.Fatal(err)
	}
	pidR := localstack.Service{Name: "public-id-regions", Addr: addr(t)}
	pidR.HealthAddr = pidR.Addr
	proc.StartT(t, proc.Spec{Bin: ls.Bin("public-id"), Name: pidR.Name, Log: filepath.Join(dir, "public-id-regions.log"), HealthURL: pidR.URL() + "/healthz",
		Args: []string{"--insecure-dev", "--listen", pidR.Addr, "--region", "us-east-1", "--store", "regions:" + filepath.Join(dir, "regions-store.json"),
			"--resources", "ord,cus", "--store-timeout", "500ms", "--deregistration-delay", "0"}})

	// A calling service: the client library with gen-a local and gen-c its peer, its metrics
	// served for Prometheus.
	cl, err := idclient.New(idclient.Config{Endpoints: []string{genA.URL(), genC.URL()}, Batch: 100, ProbeEvery: 200 * time.Millisecond, CallTimeout: 500 * time.Millisecond})
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
	for _, g := range []localstack.Service{genA, genC, genF} {
		every(50*time.Millisecond, func() { post(g.URL()+"/v1/ids:batch", `{"count": 5}`) })
	}
	// 5,000 IDs/s over a quota of 5/s (its burst is one full batch of 1,000).
	every(20*time.Millisecond, func() { post(genB.URL()+"/v1/ids:batch", `{"count": 100}`) })
	get := func(u string) {
		if r, err := hc.Get(u); err == nil {
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
	}
	every(50*time.Millisecond, func() { get("http://" + gwAddr + "/orders/" + order[1]) })
	// New mappings through the cross-region store, each written to both regions.
	var next atomic.Uint64
	next.Store(683244571854022659)
	every(50*time.Millisecond, func() {
		post(pidR.URL()+"/v1/public-ids", fmt.Sprintf(`{"internal_id":"%d"}`, next.Add(1)))
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
	proc.StartT(t, proc.Spec{Bin: "prometheus-alertmanager", Log: filepath.Join(dir, "alertmanager.log"), HealthURL: "http://" + amAddr + "/-/ready",
		Args: []string{"--config.file", filepath.Join(dir, "alertmanager.yml"), "--storage.path", filepath.Join(dir, "am"),
			"--web.listen-address", amAddr, "--cluster.listen-address", ""}})
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
	target := func(p localstack.Service, region string) string {
		return fmt.Sprintf("      - targets: [%q]\n        labels: {region: %q, name: %q}\n", p.HealthAddr, region, p.Name)
	}
	cfg := "global: {scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s}\n" +
		"rule_files: [" + filepath.Join(dir, "rules.yml") + "]\n" +
		"alerting: {alertmanagers: [{static_configs: [{targets: [\"" + amAddr + "\"]}]}]}\n" +
		"scrape_configs:\n" +
		"  - job_name: idgen-generator\n    honor_labels: true\n    static_configs:\n" +
		target(genA, "us-east-1") + target(genB, "us-east-1") + target(genC, "eu-west-1") + target(genF, "eu-west-1") + target(genT, "us-east-1") +
		"  - job_name: idgen-registry\n    static_configs:\n" + target(reg, "global") +
		"  - job_name: idgen-public-id\n    static_configs:\n" + target(pid, "us-east-1") + target(pidR, "us-east-1") +
		"  - job_name: idgen-public-id-gateway\n    static_configs:\n" + target(gws, "us-east-1") +
		"  - job_name: orders\n    static_configs:\n" + fmt.Sprintf("      - targets: [%q]\n        labels: {region: us-east-1}\n", cln.Addr().String())
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	proc.StartT(t, proc.Spec{Bin: "prometheus", Log: filepath.Join(dir, "prometheus.log"), HealthURL: "http://" + promAddr + "/-/ready",
		Args: []string{"--config.file", filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path", filepath.Join(dir, "tsdb"),
			"--web.listen-address", promAddr, "--rules.alert.resend-delay", "1s"}})
	prom := promAPI{"http://" + promAddr}

	// Every target up, and a few seconds of samples for the rates.
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		var up []string
		for _, u := range prom.query(t, `up`) {
			if u.Value[1] == "1" {
				up = append(up, u.Metric["name"]+u.Metric["job"])
			}
		}
		return len(up) == 10, fmt.Sprintf("every target up (10); up: %v", up)
	})
	time.Sleep(6 * time.Second)
	t.Logf("stack up and scraped after %v", time.Since(began).Round(time.Second))

	// What each service exports passes promtool's checks of names, help and units.
	for _, p := range []localstack.Service{genA, genT, reg, pid, pidR} {
		resp, err := http.Get("http://" + p.HealthAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("promtool", "check", "metrics")
		cmd.Stdin = resp.Body
		out, err := cmd.CombinedOutput()
		resp.Body.Close()
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("promtool check metrics on %s: %v\n%s", p.Name, err, out)
		}
	}

	// Before any fault: the alerts the faults will raise are quiet.
	for _, a := range prom.query(t, `ALERTS{alertstate="firing"}`) {
		switch a.Metric["alertname"] {
		case "IdgenGeneratorDown", "IdgenRegistryUnreachable", "IdgenLeaseRenewalsFailing", "IdgenLeaseStoreErrors", "IdgenClientOnPeerRegion", "IdgenGatewayStoreUnavailable", "IdgenPublicIDStoreVolatile",
			"IdgenPublicIDPublishesShort", "IdgenPublicIDRegionUnreachable", "IdgenPublicIDRegionFilling", "IdgenPublicIDCopiesBelowTwo":
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
		m, err := testenv.ScrapeErr(nil, "http://"+pid.HealthAddr+"/metrics")
		if err != nil {
			return false
		}
		v, ok := m.Value("idgen_publicid_store_volatile", nil)
		return ok && v == 1
	})
	_ = ls.Proc("gen-f").Signal(syscall.SIGSTOP) // frozen past its 3 s lease
	_ = ls.Proc("gen-a").Signal(syscall.SIGKILL) // a generator dies; the client moves to its peer
	dyn.Stop()                                   // the lease store goes away
	redis.Kill()                                 // the public-ID store goes away
	stores["eu-west-1"].Stop()                   // the cross-region store loses eu-west-1: publishes are short
	// The registry goes away; the generators issue on, and gen-b sees it within a second.
	_ = ls.Proc("registry").Signal(syscall.SIGKILL)
	// The gateway keeps answering the order from its cache of resolved mappings (a mapping
	// cached while the store was durable stays true), so customers now also ask for a public ID
	// nobody published: a miss is never cached, and each of those requests asks the store.
	every(50*time.Millisecond, func() { get("http://" + gwAddr + "/orders/ord_3WPYveoi14JxhMlL") })
	time.Sleep(4500 * time.Millisecond)
	_ = ls.Proc("gen-f").Signal(syscall.SIGCONT)

	want := map[string]map[string]string{
		"IdgenGeneratorDown":           {"instance": genA.HealthAddr},
		"IdgenRegistryUnreachable":     {"region": "us-east-1"},
		"IdgenLeaseRenewalsFailing":    {"instance": genF.HealthAddr},
		"IdgenLeaseStoreErrors":        {"instance": genB.HealthAddr},
		"IdgenQuotaRejections":         {"region": "us-east-1", "caller": "dev"},
		"IdgenClientOnPeerRegion":      {"job": "orders"},
		"IdgenGatewayStoreUnavailable": {"instance": gws.HealthAddr},
		"IdgenPublicIDStoreVolatile":   {"instance": pid.HealthAddr},
		// The called region is store_region; region is the calling process's.
		"IdgenPublicIDRegionUnreachable": {"region": "us-east-1", "store_region": "eu-west-1"},
		"IdgenPublicIDPublishesShort":    {"region": "us-east-1"},
		"IdgenClockCheckWarnMode":        {"instance": genB.HealthAddr},
	}
	// Not a fault: gen-t's certificate expires within the hour.
	for _, name := range []string{"IdgenTLSCertificateExpiringSoon", "IdgenTLSCertificateExpiryImminent"} {
		want[name] = map[string]string{"instance": genT.HealthAddr, "kind": "server"}
	}
	var got []amAlert
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		getJSON(t, "http://"+amAddr+"/api/v2/alerts?active=true", &got)
		var missing []string
		for name, labels := range want {
			if !slices.ContainsFunc(got, func(a amAlert) bool { return a.Labels["alertname"] == name && matches(a.Labels, labels) }) {
				missing = append(missing, fmt.Sprintf("%s%v", name, labels))
			}
		}
		slices.Sort(missing)
		return len(missing) == 0, "the induced alerts in Alertmanager; missing: " + strings.Join(missing, ", ")
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
