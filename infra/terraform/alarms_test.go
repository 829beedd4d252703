package terraform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// alertDoc is deploy/alert-thresholds.json.
type alertDoc struct {
	Description string `json:"description"`
	RunbookBase string `json:"runbook_base"`
	Alerts      []struct {
		Name       string   `json:"name"`
		Source     string   `json:"source"`
		Severity   string   `json:"severity"`
		Threshold  *float64 `json:"threshold"`
		Comparison string   `json:"comparison"`
		For        string   `json:"for"`
		Unit       string   `json:"unit"`
		Meaning    string   `json:"meaning"`
	} `json:"alerts"`
}

var (
	alertName   = regexp.MustCompile(`^Idgen[A-Z][A-Za-z0-9]*$`)
	forDuration = regexp.MustCompile(`^[1-9][0-9]*[smh]$`)
	// thresholdsRead is how a module reads the thresholds: relative to its own directory.
	thresholdsRead = regexp.MustCompile(`jsondecode\(file\("\$\{path\.module\}/([^"]+)"\)\)`)
	// thresholdLocals are the locals keyed by alert name.
	thresholdLocals = map[string]bool{"thresholds": true, "for_minutes": true, "operators": true, "alarm_descriptions": true}
)

// checkThresholdsDoc: the document describes itself, and every alert has a name, a threshold, a
// comparison, a for-duration, a unit and a one-line meaning, the side that evaluates it
// (cloudwatch or prometheus) and a severity (page or ticket). It returns the names of the alerts
// CloudWatch evaluates: the only ones an alarm may read.
func checkThresholdsDoc(data []byte) (map[string]bool, []string) {
	var doc alertDoc
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, []string{"thresholds: " + err.Error()}
	}
	var problems []string
	if doc.Description == "" {
		problems = append(problems, "thresholds: no description")
	}
	if len(doc.Alerts) == 0 {
		problems = append(problems, "thresholds: no alerts")
	}
	if !strings.HasPrefix(doc.RunbookBase, "https://") || !strings.HasSuffix(doc.RunbookBase, "/") {
		problems = append(problems, fmt.Sprintf("thresholds: runbook_base %q is not an https:// address ending in /", doc.RunbookBase))
	}
	names, seen := map[string]bool{}, map[string]bool{}
	for i, a := range doc.Alerts {
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("thresholds: alert %d (%s): ", i, a.Name)+fmt.Sprintf(format, args...))
		}
		if !alertName.MatchString(a.Name) {
			bad("name must look like IdgenSomething")
		}
		if seen[a.Name] {
			bad("name is not unique")
		}
		seen[a.Name] = true
		switch a.Source {
		case "cloudwatch":
			names[a.Name] = true
		case "prometheus":
		default:
			bad("source %q, want cloudwatch or prometheus", a.Source)
		}
		if a.Severity != "page" && a.Severity != "ticket" {
			bad("severity %q, want page or ticket", a.Severity)
		}
		if a.Threshold == nil {
			bad("no threshold")
		}
		if a.Comparison != "above" && a.Comparison != "below" {
			bad("comparison %q, want above or below", a.Comparison)
		}
		if !forDuration.MatchString(a.For) {
			bad("for %q is not a duration like 5m", a.For)
		}
		if a.Unit == "" {
			bad("no unit")
		}
		if a.Meaning == "" || strings.Contains(a.Meaning, "\n") {
			bad("meaning must be one line")
		}
	}
	return names, problems
}

// checkAlarms: every alarm is named idgen-…, its threshold is local.thresholds[NAME].threshold,
// every alert name it looks up is in the thresholds document, and the module reads that
// document (the one at want) with a path relative to path.module.
func checkAlarms(dir string, c config, names map[string]bool, want string) []string {
	var problems []string
	alarms := c.blocks("resource", "aws_cloudwatch_metric_alarm")
	if len(alarms) == 0 {
		return nil
	}
	read := false
	for _, l := range c.blocks("locals", "") {
		for _, m := range thresholdsRead.FindAllStringSubmatch(c.source(l.Body.SrcRange), -1) {
			if filepath.Clean(filepath.Join(dir, m[1])) == filepath.Clean(want) {
				read = true
			} else {
				problems = append(problems, fmt.Sprintf("%s: reads thresholds from %s, not %s", dir, filepath.Join(dir, m[1]), want))
			}
		}
	}
	if !read {
		problems = append(problems, fmt.Sprintf("%s: has alarms but does not read %s", dir, want))
	}
	for _, b := range alarms {
		bad := func(format string, args ...any) {
			problems = append(problems, at(b)+": "+fmt.Sprintf(format, args...))
		}
		if a := b.Body.Attributes["alarm_name"]; a == nil || !strings.HasPrefix(leadingLiteral(a.Expr), "idgen-") {
			bad("alarm_name must start with idgen-")
		}
		// The description links the alarm's runbook.
		if d := b.Body.Attributes["alarm_description"]; d == nil {
			bad("no alarm_description")
		} else if s := steps(traversalOf(d.Expr)); len(s) != 3 || s[0] != "local" || s[1] != "alarm_descriptions" {
			bad("alarm_description must be local.alarm_descriptions[\"<alert>\"]: the meaning and the runbook link")
		}
		th := b.Body.Attributes["threshold"]
		var s []string
		if th != nil {
			s = steps(traversalOf(th.Expr))
		}
		if len(s) != 4 || s[0] != "local" || s[1] != "thresholds" || s[3] != "threshold" {
			bad("threshold must be local.thresholds[\"<alert>\"].threshold")
		}
		for _, tr := range traversals(b.Body) {
			s := steps(tr)
			if len(s) >= 3 && s[0] == "local" && thresholdLocals[s[1]] && !names[s[2]] {
				bad("local.%s[%q]: no such alert in the thresholds", s[1], s[2])
			}
		}
	}
	return problems
}

// leadingLiteral returns the constant text an expression starts with.
func leadingLiteral(e hclsyntax.Expression) string {
	if t, ok := e.(*hclsyntax.TemplateExpr); ok && len(t.Parts) > 0 {
		e = t.Parts[0]
	}
	if l, ok := e.(*hclsyntax.LiteralValueExpr); ok && l.Val.Type() == cty.String {
		return l.Val.AsString()
	}
	return ""
}

func readThresholds(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(thresholdsFile)
	if err != nil {
		t.Fatal(err)
	}
	names, problems := checkThresholdsDoc(data)
	wantProblems(t, problems)
	return names
}

func TestThresholdsDoc(t *testing.T) { readThresholds(t) }

func TestAlarms(t *testing.T) {
	names := readThresholds(t)
	alarms := 0
	for _, dir := range moduleDirs {
		c := parseDir(t, dir)
		alarms += len(c.blocks("resource", "aws_cloudwatch_metric_alarm"))
		t.Run(dir, func(t *testing.T) { wantProblems(t, checkAlarms(dir, c, names, thresholdsFile)) })
	}
	if alarms < 4 {
		t.Errorf("%d alarms, want at least 4 (healthy hosts, unhealthy hosts, throttles, system errors)", alarms)
	}
}

func TestThresholdsDocCatch(t *testing.T) {
	cases := []struct {
		name, doc string
		want      []string
	}{
		{"good", `{"description": "d", "runbook_base": "https://git.example/idgen/blob/main/", "alerts": [{"name": "IdgenX", "source": "cloudwatch", "severity": "page", "threshold": 0, "comparison": "above", "for": "5m", "unit": "u", "meaning": "m"}]}`, nil},
		{"incomplete", `{"alerts": [{"name": "x", "comparison": "over", "for": "5 minutes", "meaning": "a\nb"}]}`,
			[]string{"no description", "runbook_base", "IdgenSomething", "source", "severity", "no threshold", "comparison", "for \"5 minutes\"", "no unit", "one line"}},
		{"unknown field", `{"description": "d", "alerts": [], "extra": 1}`, []string{"unknown field"}},
		{"duplicate", `{"description": "d", "runbook_base": "https://git.example/idgen/blob/main/", "alerts": [{"name": "IdgenX", "source": "cloudwatch", "severity": "page", "threshold": 0, "comparison": "above", "for": "5m", "unit": "u", "meaning": "m"}, {"name": "IdgenX", "source": "cloudwatch", "severity": "page", "threshold": 0, "comparison": "above", "for": "5m", "unit": "u", "meaning": "m"}]}`, []string{"not unique"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := checkThresholdsDoc([]byte(tc.doc))
			wantProblems(t, problems, tc.want...)
		})
	}
}

func TestAlarmsCatch(t *testing.T) {
	names := map[string]bool{"IdgenKnown": true}
	const reads = `locals {
  doc = jsondecode(file("${path.module}/../../../../deploy/alert-thresholds.json"))
}
`
	cases := []struct {
		name, src string
		want      []string
	}{
		{"good", reads + `resource "aws_cloudwatch_metric_alarm" "a" {
  alarm_name         = "idgen-${var.region}-known"
  alarm_description  = local.alarm_descriptions["IdgenKnown"]
  threshold          = local.thresholds["IdgenKnown"].threshold
  evaluation_periods = local.for_minutes["IdgenKnown"]
}`, nil},
		{"name, literal threshold, unknown alert", reads + `resource "aws_cloudwatch_metric_alarm" "a" {
  alarm_name         = "${var.region}-idgen-known"
  alarm_description  = local.alarm_descriptions["IdgenKnown"]
  threshold          = 20
  evaluation_periods = local.for_minutes["IdgenUnknown"]
}`, []string{"alarm_name", "threshold must be", "IdgenUnknown"}},
		{"threshold of an unknown alert", reads + `resource "aws_cloudwatch_metric_alarm" "a" {
  alarm_name        = "idgen-x"
  alarm_description = local.alarm_descriptions["IdgenKnown"]
  threshold         = local.thresholds["IdgenGone"].threshold
}`, []string{"IdgenGone"}},
		{"a description without the runbook link", reads + `resource "aws_cloudwatch_metric_alarm" "a" {
  alarm_name        = "idgen-x"
  alarm_description = local.thresholds["IdgenKnown"].meaning
  threshold         = local.thresholds["IdgenKnown"].threshold
}`, []string{"alarm_description must be"}},
		{"thresholds from elsewhere", `locals {
  doc = jsondecode(file("${path.module}/thresholds.json"))
}
resource "aws_cloudwatch_metric_alarm" "a" {
  alarm_name        = "idgen-x"
  alarm_description = local.alarm_descriptions["IdgenKnown"]
  threshold         = local.thresholds["IdgenKnown"].threshold
}`, []string{"reads thresholds from", "does not read"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantProblems(t, checkAlarms(regionDir, parse(t, "snippet.tf", tc.src), names, thresholdsFile), tc.want...)
		})
	}
}
