package terraform

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-config-inspect/tfconfig"
)

// metaArguments are a module block's arguments that are not the called module's variables.
var metaArguments = map[string]bool{"source": true, "version": true, "providers": true, "count": true, "for_each": true, "depends_on": true}

// loadModule loads a module's interface (variables, outputs, calls) as Terraform sees it.
func loadModule(dir string) (*tfconfig.Module, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	m, diags := tfconfig.LoadModule(dir)
	if diags.HasErrors() {
		return nil, diags.Err()
	}
	return m, nil
}

// callees loads every module that a configuration calls with a local source, by call name.
func callees(dir string, c config) (map[string]*tfconfig.Module, []string) {
	out := map[string]*tfconfig.Module{}
	var problems []string
	for _, b := range c.blocks("module", "") {
		src := literalString(b, "source")
		if !strings.HasPrefix(src, "./") && !strings.HasPrefix(src, "../") {
			problems = append(problems, fmt.Sprintf("%s: source %q is not a local path", at(b), src))
			continue
		}
		m, err := loadModule(filepath.Join(dir, src))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: module %s: %v", at(b), src, err))
			continue
		}
		out[b.Labels[0]] = m
	}
	return out, problems
}

// checkModuleCalls: every module block passes only variables its module declares, and every
// variable the module requires (one without a default).
func checkModuleCalls(dir string, c config) []string {
	mods, problems := callees(dir, c)
	for _, b := range c.blocks("module", "") {
		m, ok := mods[b.Labels[0]]
		if !ok {
			continue
		}
		for name := range b.Body.Attributes {
			if !metaArguments[name] && m.Variables[name] == nil {
				problems = append(problems, fmt.Sprintf("%s: passes %s, which the module does not declare", at(b), name))
			}
		}
		for _, name := range sortedKeys(m.Variables) {
			if m.Variables[name].Required && b.Body.Attributes[name] == nil {
				problems = append(problems, fmt.Sprintf("%s: does not pass required variable %s", at(b), name))
			}
		}
	}
	return problems
}

// checkOutputRefs: every module.X.Y reference names a module call X whose module has output Y.
func checkOutputRefs(dir string, c config) []string {
	mods, problems := callees(dir, c)
	for _, f := range c {
		for _, tr := range traversals(f.body) {
			s := steps(tr)
			if s[0] != "module" {
				continue
			}
			r := tr.SourceRange()
			where := fmt.Sprintf("%s:%d", filepath.ToSlash(r.Filename), r.Start.Line)
			if len(s) < 2 {
				problems = append(problems, where+": a bare module reference")
				continue
			}
			m, ok := mods[s[1]]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: module.%s is not a module call here", where, s[1]))
				continue
			}
			// module.X.Y, or module.X[key].Y for a module with count or for_each.
			out := ""
			for _, step := range s[2:] {
				if step != "[index]" && step != "[*]" {
					out = step
					break
				}
			}
			if out == "" {
				continue // the whole module object
			}
			if m.Outputs[out] == nil {
				problems = append(problems, fmt.Sprintf("%s: module.%s.%s: module %s has no output %s", where, s[1], out, s[1], out))
			}
		}
	}
	return problems
}

func TestModuleCalls(t *testing.T) {
	for _, dir := range configDirs {
		t.Run(dir, func(t *testing.T) {
			c := parseDir(t, dir)
			wantProblems(t, checkModuleCalls(dir, c))
			wantProblems(t, checkOutputRefs(dir, c))
		})
	}
}

// TestModuleCallsCatch runs the checks on a module and a caller written for the purpose.
func TestModuleCallsCatch(t *testing.T) {
	dir := t.TempDir()
	child := filepath.Join(dir, "child")
	if err := os.MkdirAll(child, 0o755); err != nil {
		t.Fatal(err)
	}
	const childTF = `
variable "needed" {
  type        = string
  description = "required"
}
variable "optional" {
  type        = string
  description = "optional"
  default     = "x"
}
output "there" {
  description = "an output"
  value       = var.needed
}
`
	if err := os.WriteFile(filepath.Join(child, "main.tf"), []byte(childTF), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, caller string
		calls, refs  []string
	}{
		{
			name: "good",
			caller: `module "c" {
  source   = "./child"
  needed   = "a"
  optional = "b"
}
output "o" { value = module.c.there }`,
		},
		{
			name: "undeclared and missing",
			caller: `module "c" {
  source = "./child"
  neded  = "a"
}`,
			calls: []string{"passes neded", "required variable needed"},
		},
		{
			name: "missing output and call",
			caller: `module "c" {
  source = "./child"
  needed = "a"
}
output "o" { value = [module.c.not_there, module.d.there] }`,
			refs: []string{"has no output not_there", "module.d is not a module call"},
		},
		{
			name:   "source not local",
			caller: `module "c" { source = "terraform-aws-modules/vpc/aws" }`,
			calls:  []string{"not a local path"},
			refs:   []string{"not a local path"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := parse(t, filepath.Join(dir, "main.tf"), tc.caller)
			t.Run("calls", func(t *testing.T) { wantProblems(t, checkModuleCalls(dir, c), tc.calls...) })
			t.Run("refs", func(t *testing.T) { wantProblems(t, checkOutputRefs(dir, c), tc.refs...) })
		})
	}
}

// TestVariablesDocumented holds the house style: every variable and output of every module is
// described, and every variable typed.
func TestVariablesDocumented(t *testing.T) {
	for _, dir := range moduleDirs {
		m, err := loadModule(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range sortedKeys(m.Variables) {
			v := m.Variables[name]
			if v.Type == "" || v.Description == "" {
				t.Errorf("%s: variable %s needs a type and a description", dir, name)
			}
		}
		for _, name := range sortedKeys(m.Outputs) {
			if m.Outputs[name].Description == "" {
				t.Errorf("%s: output %s needs a description", dir, name)
			}
		}
	}
}

// TestReadmesListInterface: each module's README lists every input and output in its tables; the
// roots of live/ are listed in live/README.md.
func TestReadmesListInterface(t *testing.T) {
	readmes := map[string]string{bootstrapDir: bootstrapDir + "/README.md", registryRootDir: liveDir + "/README.md"}
	for _, dir := range regionRootDirs {
		readmes[dir] = liveDir + "/README.md"
	}
	for _, dir := range moduleDirs {
		if readmes[dir] == "" {
			readmes[dir] = dir + "/README.md"
		}
	}
	for _, dir := range sortedKeys(readmes) {
		m, err := loadModule(dir)
		if err != nil {
			t.Fatal(err)
		}
		readme, err := os.ReadFile(readmes[dir])
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range append(sortedKeys(m.Variables), sortedKeys(m.Outputs)...) {
			if !strings.Contains(string(readme), "| `"+name+"` |") {
				t.Errorf("%s does not list %s (of %s)", readmes[dir], name, dir)
			}
		}
	}
}

// TestEveryModuleHasExample: every module under modules/ has a README and examples/basic.
func TestEveryModuleHasExample(t *testing.T) {
	dirs, err := filepath.Glob("modules/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		for _, want := range []string{"README.md", "examples/basic/main.tf"} {
			if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
				t.Errorf("%s has no %s", dir, want)
			}
		}
		if !slices.Contains(moduleDirs, dir) || !slices.Contains(configDirs, dir+"/examples/basic") {
			t.Errorf("%s is not in the tests' moduleDirs and configDirs", dir)
		}
	}
}
