package gameday_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/localstack"
)

// handConfigured returns, for each service that is not a generator, the flags that hand it a
// generator's address: a caller configured by hand, not from the topology's client config.
func handConfigured(services []localstack.Service) []string {
	gens := map[string]bool{}
	for _, s := range services {
		if s.Bin == "generator" {
			gens[s.Addr] = true
		}
	}
	var out []string
	for _, s := range services {
		if s.Bin == "generator" {
			continue
		}
		for i, a := range s.Args {
			for g := range gens {
				if strings.Contains(a, g) {
					flag := ""
					if i > 0 {
						flag = s.Args[i-1] + " "
					}
					out = append(out, s.Name+": "+flag+a)
				}
			}
		}
	}
	return out
}

// TestLocalStackCallersFromTopology holds the local stack to one source of the callers'
// endpoints: no service of its plan is handed a generator's address in its flags (a caller takes
// its endpoints from the client config file), and its sources write that file from the topology
// module's plan (localstack.WriteClientConfig) and never spell a client config, or a client's
// endpoints, themselves.
func TestLocalStackCallersFromTopology(t *testing.T) {
	// The check refuses a caller configured by hand.
	byHand := []localstack.Service{
		{Name: "generator-us-east-1", Bin: "generator", Addr: "127.0.0.1:7001"},
		{Name: "orders", Bin: "orders", Args: []string{"--generator", "http://127.0.0.1:7001"}},
		{Name: "billing", Bin: "billing", Args: []string{"--client-config", "/state/client_config.json", "--region", "us-east-1"}},
	}
	if got := handConfigured(byHand); len(got) != 1 || got[0] != "orders: --generator http://127.0.0.1:7001" {
		t.Fatalf("the check found %q in a stack with one caller configured by hand", got)
	}

	services, err := localstack.Plan(localstack.Options{Root: root(t), State: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range handConfigured(services) {
		t.Errorf("local stack: %s is a caller configured by hand: give it --client-config (the file written from the topology's plan) and its region instead", h)
	}

	writes := false
	for _, dir := range []string{"libs/localstack", "tools/runlocal"} {
		files, _ := filepath.Glob(filepath.Join(root(t), dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "WriteClientConfig" {
						writes = true
					}
				case *ast.CompositeLit:
					if sel, ok := n.Type.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == "idclient" {
							t.Errorf("%s: an idclient.%s literal: the local stack's callers are configured from the topology's plan, not by hand",
								fset.Position(n.Pos()), sel.Sel.Name)
						}
					}
				}
				return true
			})
		}
	}
	if !writes {
		t.Error("the local stack's sources (libs/localstack, tools/runlocal) never call WriteClientConfig: where does its callers' client config come from?")
	}
}
