package terraform

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/klauspost/compress/snappy"
	"github.com/zclconf/go-cty/cty"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protowire"
)

// hostConfig is a fleet's rendered Prometheus configuration as its host writes it: the instance ID
// from IMDS in place of $instance, and the scraper's certificate at dir's copy of it. A remote-write
// URL that is a plan-time placeholder (the workspace's endpoint is known after apply) becomes the
// form AMP gives it.
func hostConfig(t *testing.T, setup, region, dir string) string {
	t.Helper()
	pm := promBlock.FindStringSubmatch(setup)
	if pm == nil {
		t.Fatal("no Prometheus configuration")
	}
	cfg := strings.ReplaceAll(pm[1], "$instance", "i-0123456789abcdef0")
	var pc promConfig
	if err := yaml.Unmarshal([]byte(cfg), &pc); err != nil {
		t.Fatal(err)
	}
	if len(pc.RemoteWrite) == 1 && !strings.HasPrefix(pc.RemoteWrite[0].URL, "https://") {
		cfg = strings.Replace(cfg, pc.RemoteWrite[0].URL, "https://aps-workspaces."+region+".amazonaws.com/workspaces/ws-0123abcd-4567-89ef-0123-456789abcdef/api/v1/remote_write", 1)
	}
	// The scraper's client certificate: the caller prometheus, as the callers files name it.
	crt, key := testenv.EncodePEM(t, testenv.NewCA(t, "ca").Client(t, time.Now().Add(time.Hour), "spiffe://idgen.example/svc/prometheus"))
	for name, b := range map[string][]byte{"scraper.crt": crt, "scraper.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg = strings.ReplaceAll(cfg, "/etc/idgen-collector/"+name, filepath.Join(dir, name))
	}
	return cfg
}

// TestCollectorConfigPromtool: every fleet's Prometheus configuration, as its host writes it, is
// one Prometheus in agent mode accepts (promtool check config --agent, Debian's Prometheus 2.42:
// the release's must be as recent).
func TestCollectorConfigPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool (make setup installs Debian's prometheus):", err)
	}
	checked := map[string]bool{}
	for _, in := range fleets(t) {
		if in.vars["monitoring"].IsNull() {
			continue
		}
		dir := t.TempDir()
		cfg := hostConfig(t, strOf(in.locals["collector_setup"]), strOf(in.vars["region"]), dir)
		key := strings.ReplaceAll(cfg, dir, "")
		if checked[key] {
			continue
		}
		checked[key] = true
		p := filepath.Join(dir, "prometheus.yml")
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(promtool, "check", "config", "--agent", p).CombinedOutput(); err != nil {
			t.Errorf("%s: promtool check config --agent: %v\n%s\n--- config\n%s", in.addr, err, out, cfg)
		}
	}
	if len(checked) < 4 {
		t.Errorf("%d distinct collector configurations checked, want at least one per service (4)", len(checked))
	}

	// And promtool refuses broken ones, so the check can fail: a misspelt field, and a missing
	// client certificate.
	dir := t.TempDir()
	for name, cfg := range map[string]string{
		"misspelt": "scrape_configs:\n  - job_name: x\n    honour_labels: true\n",
		"no cert":  "scrape_configs:\n  - job_name: x\n    scheme: https\n    tls_config: {cert_file: " + dir + "/none.crt, key_file: " + dir + "/none.key}\n    static_configs: [{targets: ['127.0.0.1:443']}]\n",
	} {
		p := filepath.Join(dir, name+".yml")
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := exec.Command(promtool, "check", "config", "--agent", p).Run(); err == nil {
			t.Errorf("promtool accepted the %s configuration", name)
		}
	}
}

// alertManagerConfig is the part of the workspace's alert manager configuration the check reads.
type alertManagerConfig struct {
	Route struct {
		Receiver string `yaml:"receiver"`
	} `yaml:"route"`
	Receivers []struct {
		Name       string `yaml:"name"`
		SNSConfigs []struct {
			TopicARN   string            `yaml:"topic_arn"`
			SigV4      map[string]string `yaml:"sigv4"`
			Attributes map[string]string `yaml:"attributes"`
		} `yaml:"sns_configs"`
	} `yaml:"receivers"`
}

// checkAlertManager: definition (aws_prometheus_alert_manager_definition's) is AMP's document,
// alertmanager_config with a configuration whose every alert goes to exactly topic, signed for
// region, with the alert's severity as a message attribute.
func checkAlertManager(definition, topic, region string) (string, []string) {
	var doc struct {
		Config string `yaml:"alertmanager_config"`
	}
	if err := yaml.Unmarshal([]byte(definition), &doc); err != nil || doc.Config == "" {
		return "", []string{fmt.Sprintf("the definition is not an AMP alert manager definition (alertmanager_config): %v", err)}
	}
	var c alertManagerConfig
	if err := yaml.Unmarshal([]byte(doc.Config), &c); err != nil {
		return doc.Config, []string{"alertmanager_config: " + err.Error()}
	}
	var problems []string
	if len(c.Receivers) != 1 || c.Route.Receiver != c.Receivers[0].Name {
		return doc.Config, []string{"not exactly one receiver, the route's"}
	}
	r := c.Receivers[0]
	if len(r.SNSConfigs) != 1 {
		return doc.Config, []string{fmt.Sprintf("receiver %s has %d sns_configs, want 1", r.Name, len(r.SNSConfigs))}
	}
	sc := r.SNSConfigs[0]
	if sc.TopicARN != topic {
		problems = append(problems, fmt.Sprintf("alerts go to %s, not the root's alarm topic", sc.TopicARN))
	}
	if sc.SigV4["region"] != region {
		problems = append(problems, fmt.Sprintf("sigv4 region %q, want %q", sc.SigV4["region"], region))
	}
	if !strings.Contains(sc.Attributes["severity"], ".CommonLabels.severity") {
		problems = append(problems, "the alert's severity is not a message attribute")
	}
	return doc.Config, problems
}

// TestAlertManager: every root's alert manager sends every alert to its alarm topic, and its
// configuration is one Alertmanager accepts (amtool check-config, Debian's 0.25).
func TestAlertManager(t *testing.T) {
	amtool, err := exec.LookPath("amtool")
	if err != nil {
		t.Fatal("amtool (make setup installs Debian's prometheus-alertmanager):", err)
	}
	for _, in := range moduleInstances(t, monitoringDir) {
		defs := in.cfg.blocks("resource", "aws_prometheus_alert_manager_definition")
		if len(defs) != 1 {
			t.Errorf("%s: %d alert manager definitions, want 1", in.addr, len(defs))
			continue
		}
		v := argOf(in, defs[0], "definition", nil)
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			t.Errorf("%s: the definition is not known at plan time", in.addr)
			continue
		}
		cfg, problems := checkAlertManager(v.AsString(), in.addr+".aws_sns_topic.alarms.arn", strOf(in.vars["region"]))
		for _, p := range problems {
			t.Errorf("%s: %s", in.addr, p)
		}
		// Alertmanager parses the topic's ARN; the placeholder becomes one of the same shape.
		cfg = strings.ReplaceAll(cfg, in.addr+".aws_sns_topic.alarms.arn", "arn:aws:sns:"+strOf(in.vars["region"])+":111122223333:idgen-alarms")
		p := filepath.Join(t.TempDir(), "alertmanager.yml")
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(amtool, "check-config", p).CombinedOutput(); err != nil {
			t.Errorf("%s: amtool check-config: %v\n%s\n--- config\n%s", in.addr, err, out, cfg)
		}
	}
}

func TestAlertManagerCatch(t *testing.T) {
	const good = `alertmanager_config: |
  route:
    receiver: topic
  receivers:
    - name: topic
      sns_configs:
        - topic_arn: T
          sigv4:
            region: eu-west-1
          attributes:
            severity: '{{ .CommonLabels.severity }}'
`
	cases := []struct {
		name, def string
		want      []string
	}{
		{"good", good, nil},
		{"another topic", strings.Replace(good, "topic_arn: T", "topic_arn: U", 1), []string{"not the root's alarm topic"}},
		{"another region", strings.Replace(good, "region: eu-west-1", "region: us-east-1", 1), []string{"sigv4 region"}},
		{"no severity", strings.Replace(good, "          attributes:\n            severity: '{{ .CommonLabels.severity }}'\n", "", 1), []string{"severity is not a message attribute"}},
		{"a route to nowhere", strings.Replace(good, "receiver: topic", "receiver: other", 1), []string{"the route's"}},
		{"the bare configuration", "route:\n  receiver: topic\n", []string{"not an AMP alert manager definition"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := checkAlertManager(tc.def, "T", "eu-west-1")
			wantProblems(t, problems, tc.want...)
		})
	}
}

// series are the labels of one remote-written series.
type writtenSeries map[string]string

// writeRequest decodes a Prometheus remote-write body (snappy, then the WriteRequest protobuf:
// timeseries = 1, each with labels = 1 of name = 1 and value = 2) into its series' labels.
func writeRequest(body []byte) ([]writtenSeries, error) {
	b, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	fields := func(b []byte, f func(num protowire.Number, v []byte)) error {
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			if typ != protowire.BytesType {
				n = protowire.ConsumeFieldValue(num, typ, b)
				if n < 0 {
					return protowire.ParseError(n)
				}
				b = b[n:]
				continue
			}
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			f(num, v)
			b = b[n:]
		}
		return nil
	}
	var out []writtenSeries
	err = fields(b, func(num protowire.Number, ts []byte) {
		if num != 1 {
			return
		}
		s := writtenSeries{}
		_ = fields(ts, func(num protowire.Number, l []byte) {
			if num != 1 {
				return
			}
			var name, value string
			_ = fields(l, func(num protowire.Number, v []byte) {
				switch num {
				case 1:
					name = string(v)
				case 2:
					value = string(v)
				}
			})
			s[name] = value
		})
		out = append(out, s)
	})
	return out, err
}

// TestCollectorRemoteWrite runs Prometheus (Debian's 2.42, in agent mode) with a generator host's
// rendered configuration, its target and workspace moved to local stand-ins: it scrapes the
// target, and remote-writes to the workspace's path (snappy, signed with SigV4 for the region and
// the service aps where the build signs) up{job="idgen-generator"} with the host's region and
// instance ID, and the service's series with the region label the service gave them.
func TestCollectorRemoteWrite(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus (make setup installs Debian's):", err)
	}
	var script string
	var w collectorWant
	for _, in := range fleets(t) {
		if strings.HasPrefix(in.addr, liveDir+"/regions/eu-west-1.") && strings.HasSuffix(in.addr, ".module.region.module.fleet") {
			script, w = strOf(in.locals["collector_setup"]), wantOf(in)
		}
	}
	if script == "" {
		t.Fatal("no eu-west-1 generator fleet")
	}

	target := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(rw, r)
			return
		}
		// The generator labels its own series with its region (serve.RegionLabeled).
		fmt.Fprintln(rw, "# TYPE idgen_generator_registry_reachable gauge")
		fmt.Fprintln(rw, `idgen_generator_registry_reachable{region="eu-west-1"} 1`)
	}))
	defer target.Close()
	type received struct {
		auth, encoding string
		series         []writtenSeries
		err            error
	}
	got := make(chan received, 100)
	workspace := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s, err := writeRequest(body)
		if r.URL.Path != "/workspaces/ws-test/api/v1/remote_write" {
			err = fmt.Errorf("remote write to %s", r.URL.Path)
		}
		select {
		case got <- received{r.Header.Get("Authorization"), r.Header.Get("Content-Encoding"), s, err}:
		default:
		}
	}))
	defer workspace.Close()

	dir := t.TempDir()
	cfg := hostConfig(t, script, w.region, dir)
	var pc promConfig
	if err := yaml.Unmarshal([]byte(cfg), &pc); err != nil {
		t.Fatal(err)
	}
	cfg = strings.Replace(cfg, "'"+w.target+"'", "'"+strings.TrimPrefix(target.URL, "http://")+"'", 1)
	cfg = strings.Replace(cfg, pc.RemoteWrite[0].URL, workspace.URL+"/workspaces/ws-test/api/v1/remote_write", 1)
	cfg = strings.Replace(cfg, "scrape_interval: 15s\n  scrape_timeout: 10s", "scrape_interval: 1s\n  scrape_timeout: 1s", 1)
	p := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The hosts run Prometheus 3 (--agent); Debian's 2.42 has agent mode behind a feature flag.
	out, _ := exec.Command(prom, "--version").CombinedOutput()
	version, _, _ := strings.Cut(string(out), "\n")
	agent, debian := "--agent", strings.Contains(version, "+ds")
	if strings.HasPrefix(version, "prometheus, version 2.") {
		agent = "--enable-feature=agent"
	}
	cmd := exec.Command(prom, agent, "--config.file="+p, "--storage.agent.path="+filepath.Join(dir, "wal"), "--web.listen-address=127.0.0.1:0")
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=example", "AWS_EC2_METADATA_DISABLED=true")
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	var up, own writtenSeries
	var auth, encoding string
	deadline := time.After(45 * time.Second)
	for up == nil || own == nil {
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatal(r.err)
			}
			auth, encoding = r.auth, r.encoding
			for _, s := range r.series {
				switch s["__name__"] {
				case "up":
					up = s
				case "idgen_generator_registry_reachable":
					own = s
				}
			}
		case <-deadline:
			t.Fatalf("no up and service series written within 45 s; Prometheus said:\n%s", log.String())
		}
	}
	switch {
	case auth == "" && debian:
		// Debian's build (2.42.0+ds) sends remote writes unsigned whatever sigv4 says (its server
		// mode too): the signature is left to the release's Prometheus, which signs.
		t.Logf("this Prometheus (%s) does not sign remote writes: the SigV4 signature is not checked here", strings.TrimSpace(version))
	case !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/"+w.region+"/aps/aws4_request"):
		t.Errorf("the remote write is not signed with SigV4 for %s and aps: Authorization %q\n%s", w.region, auth, log.String())
	}
	if encoding != "snappy" {
		t.Errorf("Content-Encoding %q, want snappy", encoding)
	}
	want := writtenSeries{"__name__": "up", "job": w.job, "instance": "i-0123456789abcdef0", "region": w.region}
	if fmt.Sprint(up) != fmt.Sprint(want) {
		t.Errorf("up is %v, want %v", up, want)
	}
	if own["region"] != "eu-west-1" || own["job"] != w.job || own["instance"] != "i-0123456789abcdef0" {
		t.Errorf("the service's series is %v, want its region, job %s and the instance ID", own, w.job)
	}
}
