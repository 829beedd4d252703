package terraform

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-config-inspect/tfconfig"
)

// walkStep is a row of README.md's first-apply table.
type walkStep struct {
	n     int
	root  string            // bootstrap, live/registry or live/regions/R
	hands map[string]string // output → the variable (or file) it is copied into
}

// walkRow is a row's step number, root and the backquoted "output → variable" pairs of its
// last column.
var (
	walkPair = regexp.MustCompile("`([a-z_]+)` → `([A-Za-z_.]+)`")
	fromOut  = regexp.MustCompile(`(\w+) root's output ([a-z_]+)`)
)

// parseWalk reads the table between the first-apply markers of README.md.
func parseWalk(readme string) ([]walkStep, error) {
	start := strings.Index(readme, "<!-- first apply walk -->")
	end := strings.Index(readme, "<!-- end of first apply walk -->")
	if start < 0 || end < start {
		return nil, fmt.Errorf("README.md has no first-apply table between its markers")
	}
	var steps []walkStep
	for _, line := range strings.Split(readme[start:end], "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| step") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 6 {
			return nil, fmt.Errorf("first-apply row %q has %d cells, want 6", line, len(cells))
		}
		n, err := strconv.Atoi(strings.TrimSpace(cells[0]))
		if err != nil {
			return nil, fmt.Errorf("first-apply row %q: step %q is not a number", line, cells[0])
		}
		s := walkStep{n: n, root: strings.Trim(strings.TrimSpace(cells[1]), "`"), hands: map[string]string{}}
		for _, m := range walkPair.FindAllStringSubmatch(cells[5], -1) {
			s.hands[m[1]] = m[2]
		}
		steps = append(steps, s)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("the first-apply table has no rows")
	}
	return steps, nil
}

// walkRoots is the folders a step's root names (live/regions/R: every region root).
func walkRoots(root string) ([]string, error) {
	if root != "live/regions/R" {
		return []string{root}, nil
	}
	dirs, err := filepath.Glob("live/regions/*")
	sort.Strings(dirs)
	return dirs, err
}

// checkWalk holds the first-apply steps to the roots' interfaces and the example variables.
func checkWalk(steps []walkStep, load func(string) (*tfconfig.Module, error), tfvars map[string]bool) []string {
	var problems []string
	filled := map[string]int{} // variable → the first step that fills it
	mods := map[string]*tfconfig.Module{}
	for i, s := range steps {
		if s.n != i+1 {
			problems = append(problems, fmt.Sprintf("step %d is row %d: the steps are numbered in order from 1", s.n, i+1))
		}
		dirs, err := walkRoots(s.root)
		if err != nil || len(dirs) == 0 {
			problems = append(problems, fmt.Sprintf("step %d: no root %s", s.n, s.root))
			continue
		}
		for _, dir := range dirs {
			m, err := load(dir)
			if err != nil {
				problems = append(problems, fmt.Sprintf("step %d: root %s: %v", s.n, dir, err))
				continue
			}
			mods[dir] = m
			for out := range s.hands {
				if m.Outputs[out] == nil {
					problems = append(problems, fmt.Sprintf("step %d: %s has no output %s to hand on", s.n, dir, out))
				}
			}
		}
		for _, v := range s.hands {
			if _, ok := filled[v]; !ok {
				filled[v] = s.n
			}
		}
	}
	// The variables filled from outputs: declared by a root that reads them, named in the example.
	for v := range filled {
		if strings.HasSuffix(v, ".hcl") {
			continue // a file of idgenctl infra, not a variable
		}
		read := false
		for _, m := range mods {
			read = read || m.Variables[v] != nil
		}
		if !read {
			problems = append(problems, fmt.Sprintf("%s is filled but no root declares it", v))
		}
		if !tfvars[v] {
			problems = append(problems, fmt.Sprintf("%s is filled but live/example.tfvars does not name it", v))
		}
	}
	for i, s := range steps {
		dirs, _ := walkRoots(s.root)
		for _, dir := range dirs {
			m := mods[dir]
			if m == nil {
				continue
			}
			for _, v := range sortedKeys(m.Variables) {
				decl := m.Variables[v]
				// A variable whose description says which root's output it is copied from.
				for _, o := range fromOut.FindAllStringSubmatch(decl.Description, -1) {
					from := "live/regions/R" // "that region root's", "the requester root's"
					switch o[1] {
					case "registry":
						from = "live/registry"
					case "bootstrap":
						from = "bootstrap"
					}
					if !handsOn(steps, from, o[2], v) {
						problems = append(problems, fmt.Sprintf("%s's %s comes from %s's output %s, which no step hands on", dir, v, from, o[2]))
					}
				}
				at, isFilled := filled[v]
				switch {
				case !isFilled && decl.Required && !tfvars[v] && !(s.root == "bootstrap" && v == "region"):
					problems = append(problems, fmt.Sprintf("step %d: %s needs %s, which neither live/example.tfvars nor an earlier step gives", s.n, dir, v))
				case isFilled && at >= steps[i].n && decl.Required && !strings.Contains(decl.Description, "null"):
					// Read before (or at) the step that fills it: it must say how it is given until then.
					problems = append(problems, fmt.Sprintf("step %d: %s reads %s, filled only by step %d, and neither has a default nor says what stands for a root not applied yet", s.n, dir, v, at))
				}
			}
		}
	}
	sort.Strings(problems)
	return problems
}

func handsOn(steps []walkStep, root, out, v string) bool {
	for _, s := range steps {
		if s.root == root && s.hands[out] == v {
			return true
		}
	}
	return false
}

func exampleVars(t *testing.T) map[string]bool {
	t.Helper()
	vars, err := readTfvars("live/example.tfvars")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for k := range vars {
		out[k] = true
	}
	return out
}

// TestFirstApplyWalk: README.md's first-apply table, step by step, is wired as the roots are.
func TestFirstApplyWalk(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := parseWalk(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if problems := checkWalk(steps, loadModule, exampleVars(t)); len(problems) > 0 {
		t.Fatalf("the first-apply walk in README.md:\n%s", strings.Join(problems, "\n"))
	}
}

// TestFirstApplyWalkCatch: the walk's check on tables with a step missing, an output that does
// not exist, steps out of order, and a variable nobody gives.
func TestFirstApplyWalkCatch(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	good, err := parseWalk(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	tfvars := exampleVars(t)
	edit := func(f func([]walkStep) []walkStep) []walkStep {
		var c []walkStep
		for _, s := range good {
			h := map[string]string{}
			for k, v := range s.hands {
				h[k] = v
			}
			c = append(c, walkStep{n: s.n, root: s.root, hands: h})
		}
		return f(c)
	}
	renumber := func(c []walkStep) []walkStep {
		for i := range c {
			c[i].n = i + 1
		}
		return c
	}
	cases := []struct {
		name   string
		steps  []walkStep
		tfvars map[string]bool
		want   string
	}{
		{"the gateways' IDs never handed on", edit(func(c []walkStep) []walkStep {
			delete(c[2].hands, "transit_gateway_id")
			return c
		}), tfvars, "transit_gateways comes from live/regions/R's output transit_gateway_id, which no step hands on"},
		{"an output the root does not have", edit(func(c []walkStep) []walkStep {
			c[1].hands["public_id_dynamodb_endpoint"] = "public_id_dynamodb_endpoints"
			return c
		}), tfvars, "step 2: live/registry has no output public_id_dynamodb_endpoint to hand on"},
		{"a variable the example does not name", edit(func(c []walkStep) []walkStep { return c }),
			without(tfvars, "transit_gateways"), "transit_gateways is filled but live/example.tfvars does not name it"},
		{"a required variable nobody gives", edit(func(c []walkStep) []walkStep { return c }),
			without(tfvars, "networks"), "needs networks, which neither live/example.tfvars nor an earlier step gives"},
		{"the registry root left out", edit(func(c []walkStep) []walkStep {
			return renumber(append(c[:1:1], c[2:]...))
		}), tfvars, "vcpus_elsewhere comes from live/registry's output vcpus_at_max, which no step hands on"},
		{"steps out of order", edit(func(c []walkStep) []walkStep {
			c[0], c[1] = c[1], c[0]
			return c
		}), tfvars, "step 2 is row 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			problems := checkWalk(tc.steps, loadModule, tc.tfvars)
			found := false
			for _, p := range problems {
				found = found || strings.Contains(p, tc.want)
			}
			if !found {
				t.Fatalf("want a problem containing %q, got:\n%s", tc.want, strings.Join(problems, "\n"))
			}
		})
	}
}

func without(m map[string]bool, k string) map[string]bool {
	out := map[string]bool{}
	for key, v := range m {
		if key != k {
			out[key] = v
		}
	}
	return out
}
