package terraform

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"go.yaml.in/yaml/v3"
)

// rulesFile is the alert rules dashboards/cmd/gen writes, which Prometheus runs in development
// (scripts/observe.sh) and promtool tests.
const rulesFile = "../../dashboards/prometheus/idgen-alerts.yml"

// observeScript labels the local stack's scrape targets as the rules expect.
const observeScript = "../../scripts/observe.sh"

// ruleFile is the part of a Prometheus rule file the checks compare.
type ruleFile struct {
	Groups []struct {
		Name  string           `yaml:"name"`
		Rules []map[string]any `yaml:"rules"`
	} `yaml:"groups"`
}

// checkAMPRules: data (a rule group namespace's) is exactly the rule file want: the same bytes,
// and so the same groups with the same rules, named rule by rule where they differ.
func checkAMPRules(data, want string) []string {
	if data == want {
		return nil
	}
	var got, exp ruleFile
	if err := yaml.Unmarshal([]byte(want), &exp); err != nil {
		return []string{"the rule file: " + err.Error()}
	}
	if err := yaml.Unmarshal([]byte(data), &got); err != nil {
		return []string{"the namespace's data is not a rule file: " + err.Error()}
	}
	rules := func(f ruleFile) map[string]string {
		out := map[string]string{}
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				b, _ := json.Marshal(r)
				name, ok := r["alert"].(string)
				if !ok {
					name = fmt.Sprint("record ", r["record"])
				}
				out[g.Name+"/"+name] = string(b)
			}
		}
		return out
	}
	g, e := rules(got), rules(exp)
	var problems []string
	for _, k := range sortedKeys(e) {
		switch v, ok := g[k]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("rule %s is not in the namespace", k))
		case v != e[k]:
			problems = append(problems, fmt.Sprintf("rule %s differs: %s, want %s", k, v, e[k]))
		}
	}
	for _, k := range sortedKeys(g) {
		if _, ok := e[k]; !ok {
			problems = append(problems, fmt.Sprintf("rule %s is not in %s", k, rulesFile))
		}
	}
	if len(problems) == 0 {
		problems = append(problems, "the namespace's data is not the rule file byte for byte")
	}
	return problems
}

// moduleInstances returns the evaluated instances of the module in dir, under every root.
func moduleInstances(t *testing.T, dir string) []*instance {
	t.Helper()
	var out []*instance
	for _, root := range evaluated(t) {
		root.walk(func(in *instance) {
			if in.dir == filepath.Clean(dir) {
				out = append(out, in)
			}
		})
	}
	return out
}

// argOf evaluates a resource's argument in its instance, with extra variables (each, statement).
func argOf(in *instance, b *hclsyntax.Block, name string, extra map[string]cty.Value) cty.Value {
	a := b.Body.Attributes[name]
	if a == nil {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	return in.value(a.Expr, extra, at(b)+" "+name)
}

// TestAMPRules: every root's workspace (and the example's) holds the rules of
// dashboards/prometheus, exactly; and those are the rules of the thresholds document.
func TestAMPRules(t *testing.T) {
	want, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	ins := moduleInstances(t, monitoringDir)
	if len(ins) < 1+len(regionRootDirs) {
		t.Fatalf("%d monitoring instances, want one per root (%d) and the example", len(ins), 1+len(regionRootDirs))
	}
	for _, in := range ins {
		ns := in.cfg.blocks("resource", "aws_prometheus_rule_group_namespace")
		if len(ns) != 1 {
			t.Errorf("%s: %d rule group namespaces, want 1", in.addr, len(ns))
			continue
		}
		data := argOf(in, ns[0], "data", nil)
		if !data.IsKnown() || data.IsNull() || data.Type() != cty.String {
			t.Errorf("%s: the namespace's data is not known at plan time", in.addr)
			continue
		}
		for _, p := range checkAMPRules(data.AsString(), string(want)) {
			t.Errorf("%s: %s", in.addr, p)
		}
	}

	// The rule file has one alert per Prometheus alert of the thresholds document.
	th, err := os.ReadFile(thresholdsFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc alertDoc
	if err := json.Unmarshal(th, &doc); err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(want, &rf); err != nil {
		t.Fatal(err)
	}
	var got, exp []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			got = append(got, fmt.Sprint(r["alert"]))
		}
	}
	for _, a := range doc.Alerts {
		if a.Source == "prometheus" {
			exp = append(exp, a.Name)
		}
	}
	sort.Strings(got)
	sort.Strings(exp)
	if !slices.Equal(got, exp) {
		t.Errorf("the rule file's alerts %v, want the thresholds' Prometheus alerts %v", got, exp)
	}
}

func TestAMPRulesCatch(t *testing.T) {
	want, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	w := string(want)
	cases := []struct {
		name, data string
		want       []string
	}{
		{"same", w, nil},
		{"a threshold changed", strings.Replace(w, "(up{job=\"idgen-generator\"}) < 1", "(up{job=\"idgen-generator\"}) < 2", 1), []string{"rule idgen/IdgenGeneratorDown differs"}},
		{"a rule left out", regexp.MustCompile(`(?s)      - alert: IdgenLatencyHigh\n.*?(      - alert: )`).ReplaceAllString(w, "$1"), []string{"rule idgen/IdgenLatencyHigh is not in the namespace"}},
		{"a rule of its own", w + "      - alert: IdgenExtra\n        expr: vector(1)\n", []string{"rule idgen/IdgenExtra is not in"}},
		{"only a comment differs", strings.Replace(w, "# Generated", "# Copied", 1), []string{"not the rule file byte for byte"}},
		{"not YAML", "groups: [", []string{"not a rule file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantProblems(t, checkAMPRules(tc.data, w), tc.want...) })
	}
}

// checkAlarmActions: every CloudWatch alarm of the instance notifies, on alarm and on OK, a
// known, non-empty list of topics that includes its root's alarm topic (topic, a placeholder
// value naming the resource).
func checkAlarmActions(in *instance, topic string) []string {
	var problems []string
	for _, b := range in.cfg.blocks("resource", "aws_cloudwatch_metric_alarm") {
		for _, name := range []string{"alarm_actions", "ok_actions"} {
			v := argOf(in, b, name, nil)
			switch {
			case v.IsNull():
				problems = append(problems, fmt.Sprintf("%s %s: no %s", in.addr, at(b), name))
			case !v.IsWhollyKnown() || !v.CanIterateElements():
				problems = append(problems, fmt.Sprintf("%s %s: %s is not known at plan time", in.addr, at(b), name))
			case v.LengthInt() == 0:
				problems = append(problems, fmt.Sprintf("%s %s: %s is empty", in.addr, at(b), name))
			default:
				found := false
				for it := v.ElementIterator(); it.Next(); {
					if _, e := it.Element(); e.Type() == cty.String && e.AsString() == topic {
						found = true
					}
				}
				if !found {
					problems = append(problems, fmt.Sprintf("%s %s: %s does not notify the root's alarm topic", in.addr, at(b), name))
				}
			}
		}
	}
	return problems
}

// TestAlarmActions: every alarm of every live root (the registry root and each region root, from
// example.tfvars) notifies the root's alarm topic, which the root's monitoring makes; every region
// of the topology has a root with alarms.
func TestAlarmActions(t *testing.T) {
	roots := 0
	for _, root := range evaluated(t) {
		if !strings.HasPrefix(root.dir, liveDir+"/") {
			continue
		}
		roots++
		topic := root.addr + ".module.monitoring.aws_sns_topic.alarms.arn"
		alarms := 0
		root.walk(func(in *instance) {
			alarms += len(in.cfg.blocks("resource", "aws_cloudwatch_metric_alarm"))
			for _, p := range checkAlarmActions(in, topic) {
				t.Error(p)
			}
		})
		if alarms == 0 {
			t.Errorf("%s: no alarms", root.addr)
		}
	}
	if roots != 1+len(regionRootDirs) {
		t.Errorf("%d live roots evaluated, want %d", roots, 1+len(regionRootDirs))
	}
}

func TestAlarmActionsCatch(t *testing.T) {
	s := awsSchema(t)
	const alarm = `resource "aws_cloudwatch_metric_alarm" "a" {
  alarm_name          = "idgen-x"
  comparison_operator = "GreaterThanThreshold"
  evaluation_periods  = 1
  alarm_actions       = %s
  ok_actions          = %s
}
resource "aws_sns_topic" "alarms" {
  name = "idgen-x-alarms"
}
variable "actions" {
  type    = map(list(string))
  default = {}
}
`
	cases := []struct {
		name, alarm, ok string
		want            []string
	}{
		{"the topic", "[aws_sns_topic.alarms.arn]", "[aws_sns_topic.alarms.arn]", nil},
		{"the topic and more", `concat([aws_sns_topic.alarms.arn], ["arn:aws:sns:us-east-1:111122223333:x"])`, "[aws_sns_topic.alarms.arn]", nil},
		{"none for a region (the lookup as it was)", `lookup(var.actions, "us-west-2", [])`, `lookup(var.actions, "us-west-2", [])`, []string{"alarm_actions is empty", "ok_actions is empty"}},
		{"another topic", `["arn:aws:sns:us-east-1:111122223333:x"]`, "[aws_sns_topic.alarms.arn]", []string{"alarm_actions does not notify"}},
		{"no ok actions", "[aws_sns_topic.alarms.arn]", "null", []string{"no ok_actions"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(fmt.Sprintf(alarm, tc.alarm, tc.ok)), 0o644); err != nil {
				t.Fatal(err)
			}
			in, err := evalModule(dir, "snippet", nil, s)
			if err != nil {
				t.Fatal(err)
			}
			wantProblems(t, checkAlarmActions(in, "snippet.aws_sns_topic.alarms.arn"), tc.want...)
		})
	}
}

var (
	agentUnit    = regexp.MustCompile(`(?s)cat > /etc/systemd/system/idgen-prometheus-agent\.service <<'UNIT'\n(.*?)\nUNIT\n`)
	promBlock    = regexp.MustCompile(`(?s)cat > /etc/idgen-collector/prometheus.yml <<PROM\n(.*?)\nPROM\n`)
	cwagentBlock = regexp.MustCompile(`(?s)<<'CWAGENT'\n(.*?)\nCWAGENT\n`)
)

// promConfig is the part of the collector's Prometheus configuration the checks read.
type promConfig struct {
	ScrapeConfigs []struct {
		JobName     string `yaml:"job_name"`
		HonorLabels bool   `yaml:"honor_labels"`
		Scheme      string `yaml:"scheme"`
		TLSConfig   *struct {
			CertFile string `yaml:"cert_file"`
			KeyFile  string `yaml:"key_file"`
		} `yaml:"tls_config"`
		StaticConfigs []struct {
			Targets []string          `yaml:"targets"`
			Labels  map[string]string `yaml:"labels"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
	RemoteWrite []struct {
		URL   string            `yaml:"url"`
		SigV4 map[string]string `yaml:"sigv4"`
	} `yaml:"remote_write"`
}

// collectorWant is what one fleet's collector must do.
type collectorWant struct {
	job, region, target, remoteWrite, logGroup, unit, parameter string
	tls                                                         bool
}

// checkCollector: the boot script (userData) reads the collectors' setup script from its SSM
// parameter, with retry, and runs it after the service starts, unable to fail the boot; the setup
// script (valid bash) makes every AWS call with the boot script's retry, keeps the Prometheus
// agent restarted forever with the backoff, scrapes exactly the service's target with the job,
// region and instance labels the rules use, writes to the region's workspace, and ships the
// service's journal to its log group.
func checkCollector(userData, setup string, w collectorWant) []string {
	var problems []string
	if setup == "" {
		return []string{"no collector setup script"}
	}
	body := setup
	cmd := exec.Command("bash", "-n")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		problems = append(problems, fmt.Sprintf("the collector script is not valid bash: %v\n%s", err, out))
	}
	read := regexp.MustCompile(`(?m)^if retry "[^"]*" aws --region '` + regexp.QuoteMeta(w.region) + `' ssm get-parameter --name '` + regexp.QuoteMeta(w.parameter) + `' --query Parameter.Value --output text >/usr/local/sbin/idgen-collector-setup; then$`).FindStringIndex(userData)
	run := strings.Index(userData, "\n  /usr/local/sbin/idgen-collector-setup || ")
	start := strings.Index(userData, "\nsystemctl enable --now "+w.unit+".service\n")
	switch {
	case read == nil || !strings.Contains(userData, "\nexport -f retry\n"):
		problems = append(problems, fmt.Sprintf("the boot script does not read the setup script from %s with retry", w.parameter))
	case run < 0:
		problems = append(problems, "the collector script is not run, or its failure fails the boot (it must be run with ||)")
	case start < 0 || read[0] < start:
		problems = append(problems, "the collector script runs before the service starts")
	}
	for _, m := range awsCall.FindAllStringSubmatch(body, -1) {
		if !strings.Contains(m[1], "retry ") {
			problems = append(problems, "an AWS call of the setup script without retry: "+strings.TrimSpace(m[0]))
		}
	}
	if u := agentUnit.FindStringSubmatch(body); u == nil {
		problems = append(problems, "no Prometheus agent unit")
	} else {
		for _, want := range []string{"Restart=always", "StartLimitIntervalSec=0", "ExecStartPre=+/usr/local/sbin/idgen-restart-backoff idgen-prometheus-agent"} {
			if !strings.Contains(u[1], "\n"+want) {
				problems = append(problems, "the Prometheus agent's unit has no "+want)
			}
		}
	}
	pm := promBlock.FindStringSubmatch(body)
	if pm == nil {
		return append(problems, "no Prometheus configuration")
	}
	var pc promConfig
	if err := yaml.Unmarshal([]byte(pm[1]), &pc); err != nil {
		return append(problems, "the Prometheus configuration: "+err.Error())
	}
	if len(pc.ScrapeConfigs) != 1 {
		problems = append(problems, fmt.Sprintf("%d scrape configs, want 1", len(pc.ScrapeConfigs)))
	} else {
		sc := pc.ScrapeConfigs[0]
		if sc.JobName != w.job {
			problems = append(problems, fmt.Sprintf("job %q, want %q", sc.JobName, w.job))
		}
		if !sc.HonorLabels {
			problems = append(problems, "honor_labels is off: the services' own region labels would be renamed")
		}
		scheme := map[bool]string{true: "https", false: "http"}[w.tls]
		if sc.Scheme != scheme {
			problems = append(problems, fmt.Sprintf("scheme %q, want %q", sc.Scheme, scheme))
		}
		if w.tls && (sc.TLSConfig == nil || sc.TLSConfig.CertFile == "" || sc.TLSConfig.KeyFile == "") {
			problems = append(problems, "the mutual-TLS port is scraped without a client certificate")
		}
		if len(sc.StaticConfigs) != 1 || !slices.Equal(sc.StaticConfigs[0].Targets, []string{w.target}) {
			problems = append(problems, fmt.Sprintf("targets are not exactly %s", w.target))
		} else {
			l := sc.StaticConfigs[0].Labels
			if l["region"] != w.region {
				problems = append(problems, fmt.Sprintf("target label region %q, want %q", l["region"], w.region))
			}
			if l["instance"] != "$instance" || !strings.Contains(body, "/meta-data/instance-id)") {
				problems = append(problems, fmt.Sprintf("target label instance %q is not the host's instance ID", l["instance"]))
			}
		}
	}
	if len(pc.RemoteWrite) != 1 || pc.RemoteWrite[0].URL != w.remoteWrite || pc.RemoteWrite[0].SigV4["region"] != w.region {
		problems = append(problems, fmt.Sprintf("remote_write is not exactly %s with SigV4 in %s", w.remoteWrite, w.region))
	}
	cm := cwagentBlock.FindStringSubmatch(body)
	if cm == nil {
		return append(problems, "no CloudWatch agent configuration")
	}
	var cw struct {
		Logs struct {
			LogsCollected struct {
				Journald struct {
					CollectList []struct {
						LogGroupName string   `json:"log_group_name"`
						Units        []string `json:"units"`
					} `json:"collect_list"`
				} `json:"journald"`
			} `json:"logs_collected"`
		} `json:"logs"`
	}
	if err := json.Unmarshal([]byte(cm[1]), &cw); err != nil {
		return append(problems, "the CloudWatch agent configuration: "+err.Error())
	}
	shipped := false
	for _, c := range cw.Logs.LogsCollected.Journald.CollectList {
		if c.LogGroupName != w.logGroup {
			problems = append(problems, fmt.Sprintf("the journal goes to %s, want %s", c.LogGroupName, w.logGroup))
		}
		if slices.Contains(c.Units, w.unit+".service") {
			shipped = true
		}
	}
	if !shipped {
		problems = append(problems, fmt.Sprintf("the journal of %s.service is not shipped", w.unit))
	}
	return problems
}

func strOf(v cty.Value) string {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}

// wantOf is what the fleet instance's collector must do, from its inputs.
func wantOf(in *instance) collectorWant {
	service, region := strOf(in.vars["service"]), strOf(in.vars["region"])
	port, tls := in.vars["health_port"], false
	if port.IsNull() {
		port, tls = in.vars["service_port"], true
	}
	p, _ := port.AsBigFloat().Int64()
	return collectorWant{
		job: "idgen-" + service, region: region, target: fmt.Sprintf("127.0.0.1:%d", p), tls: tls,
		remoteWrite: strOf(in.vars["monitoring"].GetAttr("remote_write_url")),
		logGroup:    "/idgen/" + region + "/" + service, unit: "idgen-" + service,
		parameter: in.addr + ".aws_ssm_parameter.collector[0].name",
	}
}

// TestCollectors: every fleet of every live root runs the collectors, each as checkCollector
// says, writing to its own root's workspace; the jobs are those the rules and scripts/observe.sh
// name; a fleet without monitoring has none.
func TestCollectors(t *testing.T) {
	scripts := renderedUserData(t)
	jobs := map[string]bool{}
	for _, in := range fleets(t) {
		mon := in.vars["monitoring"]
		if mon.IsNull() {
			if strings.HasPrefix(in.addr, liveDir+"/") {
				t.Errorf("%s: a fleet of a live root without monitoring", in.addr)
			}
			if strings.Contains(scripts[in.addr], "idgen-collector-setup") || strOf(in.locals["collector_setup"]) != "" {
				t.Errorf("%s: no monitoring, but a collector", in.addr)
			}
			continue
		}
		w := wantOf(in)
		jobs[w.job] = true
		if want := "/idgen/collector/" + strOf(in.vars["name"]); strOf(in.locals["collector_parameter"]) != want {
			t.Errorf("%s: the setup script's parameter is %s, want %s", in.addr, strOf(in.locals["collector_parameter"]), want)
		}
		for _, p := range checkCollector(scripts[in.addr], strOf(in.locals["collector_setup"]), w) {
			t.Errorf("%s: %s", in.addr, p)
		}
		if root, _, ok := strings.Cut(in.addr, ".module."); ok && strings.HasPrefix(root, liveDir+"/") {
			if want := root + ".module.monitoring.aws_prometheus_workspace.this.prometheus_endpointapi/v1/remote_write"; w.remoteWrite != want {
				t.Errorf("%s: writes to %s, not its root's workspace", in.addr, w.remoteWrite)
			}
		}
	}

	// The jobs the rules and the dashboards select on, and the jobs of the local stack's
	// Prometheus, are the fleets'.
	selected, err := filepath.Glob("../../dashboards/grafana/*.json")
	if err != nil || len(selected) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	for _, f := range append([]string{rulesFile}, selected...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`job=\\?"([^"\\]+)\\?"`).FindAllStringSubmatch(string(b), -1) {
			if !jobs[m[1]] {
				t.Errorf("%s selects job %q, which no collector scrapes", f, m[1])
			}
		}
	}
	observe, err := os.ReadFile(observeScript)
	if err != nil {
		t.Fatal(err)
	}
	var local []string
	for _, m := range regexp.MustCompile(`job_name: (\S+)`).FindAllStringSubmatch(string(observe), -1) {
		local = append(local, m[1])
	}
	sort.Strings(local)
	if got := sortedKeys(jobs); !slices.Equal(got, local) {
		t.Errorf("the collectors' jobs %v, want scripts/observe.sh's %v", got, local)
	}
}

func TestCollectorsCatch(t *testing.T) {
	var ud, setup string
	var w collectorWant
	for _, in := range fleets(t) {
		if strings.HasSuffix(in.addr, ".module.region.module.fleet") && strings.HasPrefix(in.addr, liveDir+"/") {
			ud, setup, w = renderedUserData(t)[in.addr], strOf(in.locals["collector_setup"]), wantOf(in)
			break
		}
	}
	if setup == "" {
		t.Fatal("no generator fleet with collectors")
	}
	// The service started only after the collectors is caught.
	moved := strings.Replace(ud, "\nsystemctl enable --now "+w.unit+".service\n", "\n", 1) + "systemctl enable --now " + w.unit + ".service\n"
	cases := []struct {
		name, ud, setup string
		want            []string
	}{
		{"as rendered", ud, setup, nil},
		{"another job", ud, strings.Replace(setup, "job_name: "+w.job, "job_name: generator", 1), []string{"job \"generator\""}},
		{"no region label", ud, strings.Replace(setup, "region: '"+w.region+"', ", "", 1), []string{"target label region"}},
		{"instance the address", ud, strings.Replace(setup, "instance: '$instance'", "instance: '127.0.0.1'", 1), []string{"not the host's instance ID"}},
		{"another workspace", ud, strings.Replace(setup, "url: '"+w.remoteWrite+"'", "url: 'https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-x/api/v1/remote_write'", 1), []string{"remote_write is not exactly"}},
		{"journal elsewhere", ud, strings.Replace(setup, `"log_group_name":"`+w.logGroup+`","log_stream_name":"{instance_id}"`, `"log_group_name":"/idgen/other","log_stream_name":"{instance_id}"`, 1), []string{"the journal goes to /idgen/other"}},
		{"broken bash", ud, strings.Replace(setup, "if [ \"${1:-}\" = --certificates ]; then exit 0; fi", "if [ \"${1:-}\" = --certificates ]; then exit 0;", 1), []string{"not valid bash"}},
		{"a copy without retry", ud, strings.Replace(setup, "retry \"copying ", "true \"copying ", 1), []string{"an AWS call of the setup script without retry"}},
		{"an agent that gives up", ud, strings.Replace(setup, "StartLimitIntervalSec=0\n", "", 1), []string{"has no StartLimitIntervalSec=0"}},
		{"no setup script", ud, "", []string{"no collector setup script"}},
		{"read without retry", strings.Replace(ud, "if retry \"reading the collectors' setup\" aws", "if aws", 1), setup, []string{"does not read the setup script"}},
		{"another parameter", strings.Replace(ud, "--name '"+w.parameter+"'", "--name '/idgen/other'", 1), setup, []string{"does not read the setup script from " + w.parameter}},
		{"its failure fails the boot", strings.Replace(ud, "\n  /usr/local/sbin/idgen-collector-setup || ", "\n  /usr/local/sbin/idgen-collector-setup && ", 1), setup, []string{"is not run"}},
		{"run before the service", moved, setup, []string{"runs before the service starts"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantProblems(t, checkCollector(tc.ud, tc.setup, w), tc.want...) })
	}
}

// TestCollectorGrants: a fleet with monitoring grants its hosts ssm:GetParameter on its setup
// script's parameter, aps:RemoteWrite on its workspace, the log-stream actions on its service's log group (with retention and the
// monitoring key), and s3:GetObject on the collectors' objects: nothing else, nowhere else.
func TestCollectorGrants(t *testing.T) {
	for _, in := range fleets(t) {
		mon := in.vars["monitoring"]
		docs := in.cfg.blocks("data", "aws_iam_policy_document")
		var doc *hclsyntax.Block
		for _, d := range docs {
			if d.Labels[1] == "collector" {
				doc = d
			}
		}
		if doc == nil {
			t.Fatalf("%s: no collector policy document", fleetDir)
		}
		grants := map[string][]string{}
		for _, st := range nested(doc, "dynamic") {
			fe := argOf(in, st, "for_each", nil)
			if !fe.IsWhollyKnown() {
				t.Errorf("%s: %s for_each is not known at plan time", in.addr, at(st))
				continue
			}
			content := nested(st, "content")[0]
			for it := fe.ElementIterator(); it.Next(); {
				_, v := it.Element()
				extra := map[string]cty.Value{"statement": cty.ObjectVal(map[string]cty.Value{"value": v})}
				actions, resources := argOf(in, content, "actions", extra), argOf(in, content, "resources", extra)
				for a := actions.ElementIterator(); a.Next(); {
					_, act := a.Element()
					for r := resources.ElementIterator(); r.Next(); {
						_, res := r.Element()
						grants[act.AsString()] = append(grants[act.AsString()], strOf(res))
					}
				}
			}
		}
		if mon.IsNull() {
			if len(grants) > 0 {
				t.Errorf("%s: no monitoring, but collector grants %v", in.addr, grants)
			}
			continue
		}
		service, region := strOf(in.vars["service"]), strOf(in.vars["region"])
		group := in.addr + ".aws_cloudwatch_log_group.service[0].arn"
		objects := []string{strOf(mon.GetAttr("prometheus_s3_uri")), strOf(mon.GetAttr("cloudwatch_agent_s3_uri"))}
		if in.vars["health_port"].IsNull() {
			objects = append(objects, strOf(mon.GetAttr("scraper_cert_s3_uri")), strOf(mon.GetAttr("scraper_key_s3_uri")))
		}
		for i, o := range objects {
			objects[i] = "arn:" + in.addr + ".data.aws_partition.current.partition:s3:::" + strings.TrimPrefix(o, "s3://")
		}
		want := map[string][]string{
			"ssm:GetParameter":        {in.addr + ".aws_ssm_parameter.collector[0].arn"},
			"aps:RemoteWrite":         {strOf(mon.GetAttr("workspace_arn"))},
			"logs:CreateLogStream":    {group, group + ":log-stream:*"},
			"logs:DescribeLogStreams": {group, group + ":log-stream:*"},
			"logs:PutLogEvents":       {group, group + ":log-stream:*"},
			"s3:GetObject":            objects,
		}
		for _, a := range sortedKeys(grants) {
			if !slices.Equal(grants[a], want[a]) {
				t.Errorf("%s: %s on %v, want %v", in.addr, a, grants[a], want[a])
			}
		}
		for _, a := range sortedKeys(want) {
			if _, ok := grants[a]; !ok {
				t.Errorf("%s: %s not granted", in.addr, a)
			}
		}
		for _, lg := range in.cfg.blocks("resource", "aws_cloudwatch_log_group") {
			if got := strOf(argOf(in, lg, "name", nil)); got != "/idgen/"+region+"/"+service {
				t.Errorf("%s: log group %s, want /idgen/%s/%s", in.addr, got, region, service)
			}
			if r := argOf(in, lg, "retention_in_days", nil); !r.IsKnown() || r.IsNull() {
				t.Errorf("%s: the log group has no retention", in.addr)
			}
			if k := argOf(in, lg, "kms_key_id", nil); strings.HasPrefix(in.addr, liveDir+"/") && (!k.IsKnown() || k.IsNull()) {
				t.Errorf("%s: the log group has no KMS key", in.addr)
			}
		}
	}
}

// TestMonitoringEndpoints: every VPC's endpoints include aps-workspaces and logs, as interface
// endpoints with private DNS in the security group the fleets' egress names.
func TestMonitoringEndpoints(t *testing.T) {
	ins := moduleInstances(t, endpointsDir)
	if len(ins) == 0 {
		t.Fatal("no endpoints evaluated")
	}
	for _, in := range ins {
		var got []string
		for _, b := range in.cfg.blocks("resource", "aws_vpc_endpoint") {
			if b.Labels[1] != "monitoring" {
				continue
			}
			fe := argOf(in, b, "for_each", nil)
			for it := fe.ElementIterator(); it.Next(); {
				_, v := it.Element()
				extra := map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": v, "value": v})}
				if strOf(argOf(in, b, "vpc_endpoint_type", extra)) != "Interface" || argOf(in, b, "private_dns_enabled", extra).False() {
					t.Errorf("%s: %s is not an interface endpoint with private DNS", in.addr, v.AsString())
				}
				sg := argOf(in, b, "security_group_ids", extra)
				if sg.LengthInt() != 1 || strOf(sg.Index(cty.NumberIntVal(0))) != in.addr+".aws_security_group.this.id" {
					t.Errorf("%s: %s is not in the endpoints' security group", in.addr, v.AsString())
				}
				got = append(got, strings.TrimPrefix(strOf(argOf(in, b, "service_name", extra)), "com.amazonaws."+strOf(in.vars["region"])+"."))
			}
		}
		sort.Strings(got)
		if !slices.Equal(got, []string{"aps-workspaces", "logs"}) {
			t.Errorf("%s: monitoring endpoints %v, want aps-workspaces and logs", in.addr, got)
		}
	}
}

// TestMonitoringEndpointsZones: the plan stops when aps-workspaces (or logs) is not offered in
// the zone of one of the endpoints' subnets, naming the zone and the subnet; as for the other
// interface services (TestEndpointsNetworkChecks).
func TestMonitoringEndpointsZones(t *testing.T) {
	inputs := map[string]cty.Value{
		"name": cty.StringVal("idgen-eu-west-1"), "region": cty.StringVal("eu-west-1"),
		"vpc_id": cty.StringVal(netVPC), "vpc_cidr": cty.StringVal("10.2.0.0/16"),
		"subnet_ids": strs(netSubnets...), "route_table_ids": strs("rtb-0e3000000000000a1"),
	}
	services := []string{"dynamodb", "ec2messages", "kms", "monitoring", "ssm", "ssmmessages", "sts"}
	for _, tc := range []struct {
		name   string
		change func(a awsAnswers)
		want   [][]string
	}{
		{"offered everywhere", func(awsAnswers) {}, nil},
		{"aps-workspaces not in a zone", func(a awsAnswers) {
			a.each["data.aws_vpc_endpoint_service.monitoring"]["aps-workspaces"]["availability_zones"] = strSet("eu-west-1a", "eu-west-1c")
		}, [][]string{{"com.amazonaws.eu-west-1.aps-workspaces is not offered in eu-west-1b (subnets " + netSubnets[1] + ")", "leave aps-workspaces out of monitoring_services"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := endpointsAnswers(services)
			tc.change(a)
			wantMessages(t, dataConditions(t, endpointsDir, inputs, a), tc.want...)
		})
	}
}
