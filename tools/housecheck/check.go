package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/types/typeutil"

	"github.com/idgen/idgen/libs/localstack"
)

// repo is the import path prefix of the workspace's modules.
const repo = "github.com/idgen/idgen/"

// The owners of the client config: the local stack writes it, idclient defines and reads it,
// topology plans it (from Terraform's outputs, localized to addresses it is given); and this
// command's own test plants breaches of the rule.
var clientConfigOwners = []string{repo + "libs/localstack", repo + "libs/idclient", repo + "libs/topology", repo + "tools/housecheck"}

// Finding is one breach of a rule.
type Finding struct {
	Pos  token.Position
	Rule string // "client-config" or "layers"
	Msg  string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", f.Pos.Filename, f.Pos.Line, f.Rule, f.Msg)
}

// Check loads patterns (default: ./MODULE/... for every module of the go.work at root) with
// their tests and returns the findings, sorted by file and line.
func Check(root string, patterns ...string) ([]Finding, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if len(patterns) == 0 {
		if patterns, err = workspacePatterns(root); err != nil {
			return nil, err
		}
	}
	cfg := &packages.Config{Dir: root, Tests: true, Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports |
		packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax | packages.NeedModule}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	var loadErrs []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			loadErrs = append(loadErrs, e.Error())
		}
	}
	if len(loadErrs) > 0 {
		return nil, fmt.Errorf("the packages do not load:\n%s", strings.Join(loadErrs, "\n"))
	}
	c := &checker{root: root, seen: map[string]bool{}, closure: map[string]map[string]bool{}, byID: map[string]*packages.Package{}}
	packages.Visit(pkgs, nil, func(p *packages.Package) { c.byID[p.ID] = p })
	addrs, err := generatorAddrs()
	if err != nil {
		return nil, err
	}
	c.addrs = addrs
	for _, p := range pkgs {
		c.allowed = map[string]map[int]bool{}
		for _, f := range p.Syntax {
			c.noteAllows(p.Fset, f)
		}
		if !ownsClientConfig(p.PkgPath) {
			for _, f := range p.Syntax {
				c.clientConfig(p, f)
			}
		}
		c.layers(p)
	}
	sort.Slice(c.out, func(i, j int) bool {
		a, b := c.out[i].Pos, c.out[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Line < b.Line
	})
	return c.out, nil
}

// workspacePatterns returns ./DIR/... for every module of the workspace, relative to root.
func workspacePatterns(root string) ([]string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m: %v\n%s", err, stderr.Bytes())
	}
	var pats []string
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		pats = append(pats, "./"+filepath.ToSlash(rel)+"/...")
	}
	return pats, nil
}

// generatorAddrs matches the local stack's generator addresses, from its description.
func generatorAddrs() (*regexp.Regexp, error) {
	var ports []string
	for _, u := range localstack.MakeRunGenerators() {
		i := strings.LastIndex(u, ":")
		if i < 0 {
			return nil, fmt.Errorf("a generator URL without a port: %s", u)
		}
		ports = append(ports, regexp.QuoteMeta(u[i+1:]))
	}
	slices.Sort(ports)
	return regexp.Compile(`(127\.0\.0\.1|localhost):(` + strings.Join(ports, "|") + `)\b`)
}

var endpointsJSON = regexp.MustCompile(`"endpoints"\s*:\s*\[`)

type checker struct {
	root    string
	addrs   *regexp.Regexp
	byID    map[string]*packages.Package
	closure map[string]map[string]bool // package ID → the workspace import paths it reaches
	allowed map[string]map[int]bool    // file → lines a housecheck:allow comment covers
	seen    map[string]bool
	out     []Finding
}

func (c *checker) report(fset *token.FileSet, pos token.Pos, rule, format string, args ...any) {
	p := fset.Position(pos)
	if c.allowed[p.Filename][p.Line] {
		return
	}
	if rel, err := filepath.Rel(c.root, p.Filename); err == nil {
		p.Filename = filepath.ToSlash(rel)
	}
	msg := fmt.Sprintf(format, args...)
	key := p.Filename + ":" + strconv.Itoa(p.Line) + ":" + rule + ":" + msg
	if c.seen[key] { // a file is in a package and in its test variant
		return
	}
	c.seen[key] = true
	c.out = append(c.out, Finding{Pos: p, Rule: rule, Msg: msg})
}

func (c *checker) noteAllows(fset *token.FileSet, f *ast.File) {
	for _, g := range f.Comments {
		for _, cm := range g.List {
			if strings.Contains(cm.Text, "housecheck:allow") {
				p := fset.Position(cm.Pos())
				if c.allowed[p.Filename] == nil {
					c.allowed[p.Filename] = map[int]bool{}
				}
				c.allowed[p.Filename][p.Line] = true
				c.allowed[p.Filename][p.Line+1] = true
			}
		}
	}
}

func ownsClientConfig(pkgPath string) bool {
	pkgPath = strings.TrimSuffix(pkgPath, "_test")
	if strings.Contains(pkgPath, "/testdata/") { // a package planted by a test
		return false
	}
	for _, o := range clientConfigOwners {
		if pkgPath == o || strings.HasPrefix(pkgPath, o+"/") {
			return true
		}
	}
	return false
}

// isClientConfig reports whether t is idclient.ClientConfig (or, with endpoints,
// idclient.RegionEndpoints), or a pointer to one.
func isClientConfig(t types.Type, endpoints bool) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg().Path() != repo+"libs/idclient" {
		return false
	}
	return n.Obj().Name() == "ClientConfig" || endpoints && n.Obj().Name() == "RegionEndpoints"
}

// Functions whose string arguments build or write a file's path.
var pathFuncs = map[string]bool{"path/filepath.Join": true, "path.Join": true, "os.WriteFile": true, "os.Create": true, "os.OpenFile": true}

// Functions that marshal their argument.
var marshalFuncs = map[string]bool{"encoding/json.Marshal": true, "encoding/json.MarshalIndent": true, "(*encoding/json.Encoder).Encode": true}

// Flag definitions, and the index of their default value.
var flagDefaults = map[string]int{"flag.String": 1, "flag.StringVar": 2, "(*flag.FlagSet).String": 1, "(*flag.FlagSet).StringVar": 2}

func (c *checker) clientConfig(p *packages.Package, f *ast.File) {
	info := p.TypesInfo
	flagDefault := map[ast.Expr]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		fn, _ := typeutil.Callee(info, call).(*types.Func)
		if fn == nil {
			return true
		}
		name := fn.FullName()
		if i, ok := flagDefaults[name]; ok && i < len(call.Args) {
			flagDefault[call.Args[i]] = true
		}
		if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil && fn.Name() == "WriteFile" && isClientConfig(sig.Recv().Type(), false) {
			c.report(p.Fset, call.Pos(), "client-config", "a client config written by hand (ClientConfig.WriteFile): the local stack's is written by localstack.WriteClientConfig only")
		}
		if marshalFuncs[name] && len(call.Args) > 0 {
			if tv, ok := info.Types[call.Args[0]]; ok && isClientConfig(tv.Type, true) {
				c.report(p.Fset, call.Pos(), "client-config", "a client config marshalled by hand (%s): the local stack's is written by localstack.WriteClientConfig only", fn.Name())
			}
		}
		if pathFuncs[name] {
			for _, a := range call.Args {
				if s, ok := stringValue(info, a); ok && strings.Contains(s, "client_config.json") {
					c.report(p.Fset, a.Pos(), "client-config", "the client config's file spelled by hand (%s): use localstack.ClientConfigFile, and localstack.WriteClientConfig to write it", fn.Name())
				}
			}
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if tv, ok := info.Types[n]; ok && isClientConfig(tv.Type, true) {
				c.report(p.Fset, n.Pos(), "client-config", "an idclient.%s literal: a client config built by hand; the local stack's callers are configured by localstack.WriteClientConfig from the topology's plan",
					tv.Type.(*types.Named).Obj().Name())
				return false
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(n.Value)
			if err != nil {
				return true
			}
			if endpointsJSON.MatchString(s) {
				c.report(p.Fset, n.Pos(), "client-config", "a client config's JSON spelled by hand: write it with localstack.WriteClientConfig")
			}
			if m := c.addrs.FindString(s); m != "" && !flagDefault[n] {
				c.report(p.Fset, n.Pos(), "client-config", "%s, a local generator's address, by hand: take it from the stack (localstack.Plan, RegionAddrs, MakeRunGenerators) or the client config", m)
			}
		}
		return true
	})
}

func stringValue(info *types.Info, e ast.Expr) (string, bool) {
	tv, ok := info.Types[e]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return "", false
	}
	return constant.StringVal(tv.Value), true
}

// reach returns the workspace import paths package id reaches, itself excluded.
func (c *checker) reach(id string) map[string]bool {
	if r, ok := c.closure[id]; ok {
		return r
	}
	r := map[string]bool{}
	c.closure[id] = r // an import cycle is not possible; this ends a revisit
	p := c.byID[id]
	if p == nil {
		return r
	}
	for _, imp := range p.Imports {
		if !strings.HasPrefix(imp.PkgPath, repo) {
			continue
		}
		r[imp.PkgPath] = true
		for q := range c.reach(imp.ID) {
			r[q] = true
		}
	}
	return r
}

// layer is one rule of the import layers: packages it applies to must not reach forbidden ones.
type layer struct {
	applies   func(p *packages.Package) bool
	forbidden func(path string) bool
	why       string
}

func under(path string, dirs ...string) bool {
	for _, d := range dirs {
		if path == repo+d || strings.HasPrefix(path, repo+d+"/") || path == repo+d+"_test" {
			return true
		}
	}
	return false
}

// isTest reports whether p is a test variant (p [p.test], p_test, p.test) rather than the
// package that ships.
func isTest(p *packages.Package) bool {
	return p.ID != p.PkgPath || strings.HasSuffix(p.PkgPath, ".test") || strings.HasSuffix(p.PkgPath, "_test")
}

var layers = []layer{
	{
		applies:   func(p *packages.Package) bool { return !isTest(p) && !under(p.PkgPath, "libs/testenv") },
		forbidden: func(path string) bool { return under(path, "libs/testenv") },
		why:       "code that ships never imports libs/testenv, the tests' fixtures (the local stack's runtime is libs/localstack)",
	},
	{
		applies: func(p *packages.Package) bool { return under(p.PkgPath, "libs/testenv") },
		forbidden: func(path string) bool {
			return under(path, "services", "tools", "examples") || path == repo+"libs/localstack"
		},
		why: "libs/testenv never imports the services, the tools, the examples or the stack's description (libs/localstack); its launchers (libs/localstack/proc, dynalite, fakenlb, cmdline) it may",
	},
	{
		applies:   func(p *packages.Package) bool { return !isTest(p) && strings.HasPrefix(p.PkgPath, repo+"libs/") },
		forbidden: func(path string) bool { return under(path, "services", "tools", "examples") },
		why:       "the libraries never import the services, the tools or the examples",
	},
}

func (c *checker) layers(p *packages.Package) {
	for _, l := range layers {
		if !l.applies(p) {
			continue
		}
		for _, f := range p.Syntax {
			for _, spec := range f.Imports {
				path, err := strconv.Unquote(spec.Path.Value)
				if err != nil || !strings.HasPrefix(path, repo) {
					continue
				}
				imp := p.Imports[path]
				if l.forbidden(path) {
					c.report(p.Fset, spec.Pos(), "layers", "%s imports %s: %s", p.PkgPath, path, l.why)
					continue
				}
				if imp == nil {
					continue
				}
				var bad []string
				for q := range c.reach(imp.ID) {
					if l.forbidden(q) {
						bad = append(bad, q)
					}
				}
				if len(bad) > 0 {
					slices.Sort(bad)
					c.report(p.Fset, spec.Pos(), "layers", "%s imports %s, which reaches %s: %s", p.PkgPath, path, strings.Join(bad, ", "), l.why)
				}
			}
		}
	}
}
