package dashboards_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/idgen/idgen/dashboards"
	"github.com/prometheus/prometheus/promql/parser"
)

const thresholds = "../" + dashboards.ThresholdsFile

// TestGeneratedUpToDate regenerates every file into a temporary folder and compares it with the
// committed one: a change to the thresholds, the rules or the dashboards needs
// `go run ./dashboards/cmd/gen`.
func TestGeneratedUpToDate(t *testing.T) {
	tmp := t.TempDir()
	if err := dashboards.Generate(tmp, thresholds, dashboards.Options{}); err != nil {
		t.Fatal(err)
	}
	var generated []string
	err := filepath.WalkDir(tmp, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(tmp, p)
		generated = append(generated, rel)
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(rel)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale or missing: run go run ./dashboards/cmd/gen from the repository root", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"prometheus", "grafana"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !slices.Contains(generated, filepath.Join(dir, e.Name())) {
				t.Errorf("%s is not generated any more: remove it", filepath.Join(dir, e.Name()))
			}
		}
	}
}

// TestPromtool checks the committed rules and runs their unit tests (each alert firing and not
// firing) with Prometheus' own promtool.
func TestPromtool(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Fatal("promtool is missing: run make setup (apt-get install prometheus)")
	}
	for _, args := range [][]string{{"check", "rules", filepath.Base(dashboards.RulesFile)}, {"test", "rules", filepath.Base(dashboards.RuleTestsFile)}} {
		cmd := exec.Command("promtool", args...)
		cmd.Dir = filepath.Dir(dashboards.RulesFile)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestRuleTestsCoverEveryAlert: the generated unit tests have a firing and a quiet case for each
// alert of the rule file.
func TestRuleTestsCoverEveryAlert(t *testing.T) {
	b, err := os.ReadFile(dashboards.RuleTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range dashboards.Names() {
		for _, c := range []string{" fires", " does not fire"} {
			if !bytes.Contains(b, []byte("name: "+name+c+"\n")) {
				t.Errorf("%s: no unit test %q", dashboards.RuleTestsFile, name+c)
			}
		}
	}
}

var runbookSections = []string{"Meaning", "Impact", "Diagnosis", "Mitigation", "Verification", "Escalation"}

// TestRunbooks: every alert, Prometheus' and CloudWatch's, has runbooks/alerts/NAME.md with the
// six sections, each with text, no placeholder, and at least one runnable command block.
func TestRunbooks(t *testing.T) {
	th, err := dashboards.LoadThresholds(thresholds)
	if err != nil {
		t.Fatal(err)
	}
	placeholder := regexp.MustCompile(`(?i)\b(TODO|TBD|FIXME|XXX|lorem)\b|<[a-z_-]+>`)
	for _, a := range th.Alerts {
		p := filepath.Join("..", dashboards.RunbookDir, a.Name+".md")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("alert %s: no runbook: %v", a.Name, err)
			continue
		}
		text := string(b)
		if !strings.HasPrefix(text, "# "+a.Name+"\n") {
			t.Errorf("%s: does not start with # %s", p, a.Name)
		}
		for i, s := range runbookSections {
			at := strings.Index(text, "\n## "+s+"\n")
			if at < 0 {
				t.Errorf("%s: no section ## %s", p, s)
				continue
			}
			if i > 0 && at < strings.Index(text, "\n## "+runbookSections[i-1]+"\n") {
				t.Errorf("%s: section %s out of order", p, s)
			}
		}
		for _, line := range strings.Split(text, "\n") {
			if m := placeholder.FindString(line); m != "" && !strings.Contains(line, "<Name>") {
				t.Errorf("%s: placeholder %q in %q", p, m, line)
			}
		}
		if !strings.Contains(text, "```sh run\n") {
			t.Errorf("%s: no runnable command block (```sh run)", p)
		}
	}
	entries, _ := os.ReadDir(filepath.Join("..", dashboards.RunbookDir))
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".md")
		if !slices.ContainsFunc(th.Alerts, func(a dashboards.Threshold) bool { return a.Name == name }) && e.Name() != "README.md" {
			t.Errorf("%s: no alert %s in %s", e.Name(), name, dashboards.ThresholdsFile)
		}
	}
}

// Queries returns every PromQL expression of the committed rules and dashboards, dashboards'
// template variables replaced by region (and $__rate_interval by rateInterval).
func queries(t *testing.T, region, rateInterval string) (rules, panels map[string]string) {
	t.Helper()
	th, err := dashboards.LoadThresholds(thresholds)
	if err != nil {
		t.Fatal(err)
	}
	rules = map[string]string{}
	for _, a := range th.Prometheus() {
		for _, r := range dashboards.Rules {
			if r.Name == a.Name {
				rules[a.Name] = dashboards.AlertExpr(r, a)
			}
		}
	}
	panels = map[string]string{}
	for _, d := range dashboards.Dashboards {
		b, err := os.ReadFile(filepath.Join(dashboards.GrafanaDir, d.File))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Panels []struct {
				Type, Title, Description string
				Targets                  []struct{ Expr string }
			}
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range doc.Panels {
			if p.Type == "row" {
				continue
			}
			n++
			if p.Description == "" {
				t.Errorf("%s: panel %q has no description", d.File, p.Title)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", d.File, p.Title)
			}
			for i, tg := range p.Targets {
				q := strings.NewReplacer("$__rate_interval", rateInterval, "$region", region).Replace(tg.Expr)
				panels[d.File+": "+p.Title+": "+string(rune('A'+i))] = q
			}
		}
		if n == 0 {
			t.Errorf("%s: no panels", d.File)
		}
	}
	return rules, panels
}

// metricNames parses expr and returns the metric names it selects.
func metricNames(t *testing.T, what, expr string) []string {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", what, expr, err)
		return nil
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if vs.Name == "" {
				t.Errorf("%s: a selector without a metric name: %s", what, vs)
			}
			names = append(names, vs.Name)
		}
		return nil
	})
	if len(names) == 0 {
		t.Errorf("%s: selects no metric", what)
	}
	return names
}

// TestQueriesParse: every rule and panel query parses as PromQL and names its metrics.
func TestQueriesParse(t *testing.T) {
	rules, panels := queries(t, "us-east-1", "1m")
	if len(rules) != len(dashboards.Rules) {
		t.Errorf("%d rules with thresholds, want %d", len(rules), len(dashboards.Rules))
	}
	for what, q := range rules {
		metricNames(t, what, q)
	}
	for what, q := range panels {
		if strings.Contains(q, "$") {
			t.Errorf("%s: a template variable is left in %q", what, q)
		}
		metricNames(t, what, q)
	}
}
