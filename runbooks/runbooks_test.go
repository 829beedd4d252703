package runbooks

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// blockTimeout bounds one runnable block.
const blockTimeout = 60 * time.Second

// TestRunbooks runs every runnable block of every runbook, in file order, against one local
// stack. A runbook restores what it changes (a quarantine is lifted, a fence waited out): after
// each runbook both generators must be healthy again within 30 s.
func TestRunbooks(t *testing.T) {
	files, err := runbookFiles()
	if err != nil {
		t.Fatal(err)
	}
	type rb struct {
		file   string
		blocks []block
	}
	var todo []rb
	for _, f := range files {
		blocks, err := parse(f)
		if err != nil {
			t.Fatal(err)
		}
		var run []block
		for _, b := range blocks {
			if b.runnable() {
				run = append(run, b)
			}
		}
		if len(run) > 0 {
			todo = append(todo, rb{f, run})
		}
	}
	if len(todo) == 0 {
		t.Fatal("no runnable blocks found")
	}
	s := startStack(t)
	for _, r := range todo {
		t.Run(strings.TrimSuffix(r.file, ".md"), func(t *testing.T) {
			start := time.Now()
			work := t.TempDir()
			for _, b := range r.blocks {
				out, err := runBlock(s, work, b)
				if err != nil {
					t.Fatalf("%s: the block failed: %v\n--- block\n%s--- output\n%s", b.where(), err, b.body, out)
				}
				if b.expect != nil {
					if line, want := matchExpect(b.expect, out); line != 0 {
						t.Fatalf("runbooks/%s:%d: expected output not found (in order): %q\n--- block (%s)\n%s--- output\n%s",
							b.file, line, want, b.where(), b.body, out)
					}
				}
			}
			for region := range s.generators {
				s.waitRegionHealthy(t, "runbooks/"+r.file, region, 30*time.Second)
			}
			t.Logf("runbooks/%s: %d blocks in %v", r.file, len(r.blocks), time.Since(start).Round(time.Millisecond))
		})
	}
}

func runBlock(s *stack, dir string, b block) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+b.body)
	cmd.Dir = dir
	cmd.Env = s.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return out.String(), err
}

// The sections of a procedure runbook, in order.
var sections = []string{"Meaning", "Impact", "Diagnosis", "Mitigation", "Verification", "Escalation"}

var placeholder = regexp.MustCompile(`\b(TODO|TBD|FIXME|XXX)\b|<[A-Z_]+>|lorem ipsum`)

// TestRunbookShape: every procedure runbook has the six sections, in order, runs at least one
// block, and holds no placeholder text.
func TestRunbookShape(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f == "README.md" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		pos := 0
		for _, s := range sections {
			i := strings.Index(text[pos:], "\n## "+s)
			if i < 0 {
				t.Errorf("runbooks/%s: no section %q after the ones before it", f, s)
				break
			}
			pos += i + 1
		}
		if m := placeholder.FindString(text); m != "" {
			t.Errorf("runbooks/%s: placeholder text %q", f, m)
		}
		blocks, err := parse(f)
		if err != nil {
			t.Fatal(err)
		}
		runs := 0
		for _, bl := range blocks {
			if bl.runnable() {
				runs++
			}
		}
		if runs == 0 {
			t.Errorf("runbooks/%s: no runnable block", f)
		}
	}
}

// TestIndex: README.md links every runbook, the per-alert ones in runbooks/alerts/ included.
func TestIndex(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	files, err := runbookFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f == "README.md" {
			continue
		}
		if !strings.Contains(string(readme), "]("+f+")") {
			t.Errorf("runbooks/README.md does not index %s: add a line linking (%s)", f, f)
		}
	}
}

// The design's CLI playbook. Every line appears verbatim in the runbooks; the DynamoDB ones in
// runnable blocks, so they run against dynalite.
var playbook = []struct {
	line     string
	runnable bool
}{
	{`aws dynamodb scan --region eu-west-1 --table-name idgen-leases-v2 --projection-expression "machine_id, #h, lease_expiry, lease_epoch" --expression-attribute-names '{"#h": "holder"}'`, true},
	{`aws dynamodb get-item --region eu-west-1 --table-name idgen-leases-v2 --key '{"machine_id": {"N": "170"}}'`, true},
	{`aws dynamodb update-item --region eu-west-1 --table-name idgen-leases-v2 --key '{"machine_id": {"N": "170"}}' --update-expression "SET #h = :q, lease_expiry = :far ADD lease_epoch :one" --expression-attribute-names '{"#h": "holder"}' --expression-attribute-values '{":q": {"S": "QUARANTINED"}, ":far": {"N": "4102444800000"}, ":one": {"N": "1"}}'`, true},
	{`aws ssm send-command --region eu-west-1 --document-name "AWS-RunShellScript" --targets "Key=tag:Service,Values=idgen" --parameters 'commands=["chronyc tracking"]'`, false},
	{`aws elbv2 describe-target-health --region eu-west-1 --target-group-arn arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/idgen-workers/0123456789abcdef`, false},
	{`aws elbv2 deregister-targets --region eu-west-1 --target-group-arn arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/idgen-workers/0123456789abcdef --targets Id=i-0a1b2c3d4e5f67890`, false},
	{`aws cloudwatch describe-alarms --region eu-west-1 --state-value ALARM --alarm-name-prefix idgen`, false},
	// Scaling a fleet is a change of the configuration (its capacity in live/idgen.tfvars), planned
	// and applied: one made by hand is put back by the next apply.
	{`idgenctl infra plan --region us-east-1`, false},
	{`idgenctl infra apply --plan infra/terraform/live/regions/us-east-1/idgen.tfplan`, false},
	{`aws athena start-query-execution --region eu-west-1 --work-group primary --query-string "SELECT id, COUNT(*) AS n FROM orders_export WHERE created_at BETWEEN TIMESTAMP '2031-03-01 09:00:00' AND TIMESTAMP '2031-03-01 10:00:00' GROUP BY id HAVING COUNT(*) > 1"`, false},
}

func TestPlaybookVerbatim(t *testing.T) {
	files, _ := filepath.Glob("*.md")
	for _, p := range playbook {
		found := false
		for _, f := range files {
			blocks, err := parse(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range blocks {
				if (b.runnable() || !p.runnable && strings.HasPrefix(b.info, "sh")) && containsLine(b.body, p.line) {
					found = true
				}
			}
		}
		if !found {
			kind := "a sh block"
			if p.runnable {
				kind = "a sh run block"
			}
			t.Errorf("the playbook line is in no runbook's %s, verbatim:\n%s", kind, p.line)
		}
	}
}

func containsLine(body, line string) bool {
	for _, l := range strings.Split(body, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}
