package model

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pkgDirs maps the package names used in lease.pml's rule comments to their directories.
var pkgDirs = map[string]string{
	"idcore":      "../libs/idcore",
	"lease":       "../libs/idcore/lease",
	"sqlitelease": "../libs/idcore/lease/sqlitelease",
}

// testDirs are where a package's tests may also be: the tests that start real servers live in
// libs/idcore/e2e, a module of its own, so that the library's callers do not require the test
// fixtures.
var testDirs = map[string]string{
	"idcore": "../libs/idcore/e2e",
	"lease":  "../libs/idcore/e2e/lease",
}

var reRule = regexp.MustCompile(`rule ([a-z_]+): go ([A-Za-z0-9_.]+) test ([A-Za-z0-9_.]+)`)

// TestRuleLinks: every "rule NAME: go PKG.FUNC test PKG.TEST" comment of lease.pml names a Go
// function that exists and a Go test that exists and whose comment names the rule.
func TestRuleLinks(t *testing.T) {
	src, err := os.ReadFile("lease.pml")
	if err != nil {
		t.Fatal(err)
	}
	rules := reRule.FindAllStringSubmatch(string(src), -1)
	if len(rules) < 15 {
		t.Fatalf("found %d rule comments in lease.pml, want every rule (at least 15)", len(rules))
	}
	for _, r := range rules {
		name, fn, test := r[1], r[2], r[3]
		t.Run(name, func(t *testing.T) {
			if _, ok := find(t, fn, false); !ok {
				t.Errorf("go %s: no such function", fn)
			}
			doc, ok := find(t, test, true)
			switch {
			case !ok:
				t.Errorf("test %s: no such test", test)
			case !mentions(doc, name):
				t.Errorf("test %s: its comment does not name model rule %s", test, name)
			}
		})
	}
}

// mentions reports whether a test's comment names the rule ("model rule NAME" or "model rules
// A and NAME").
func mentions(doc, rule string) bool {
	doc = strings.Join(strings.Fields(doc), " ")
	i := strings.Index(doc, "model rule")
	return i >= 0 && regexp.MustCompile(`\b`+rule+`\b`).MatchString(doc[i:])
}

// find looks up PKG.FUNC, PKG.TYPE.METHOD or PKG.TEST in the package's directory (test files
// only when test is set) and returns its doc comment.
func find(t *testing.T, name string, test bool) (string, bool) {
	parts := strings.Split(name, ".")
	dir, ok := pkgDirs[parts[0]]
	if !ok || len(parts) < 2 || len(parts) > 3 {
		t.Errorf("%s: unknown package or malformed name (packages: idcore, lease, sqlitelease)", name)
		return "", false
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	if e2e, ok := testDirs[parts[0]]; ok && test {
		more, err := filepath.Glob(filepath.Join(e2e, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, more...)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") != test {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != parts[len(parts)-1] {
				continue
			}
			recv := ""
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				typ := fd.Recv.List[0].Type
				if st, ok := typ.(*ast.StarExpr); ok {
					typ = st.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					recv = id.Name
				}
			}
			if (len(parts) == 3) != (recv != "") || (len(parts) == 3 && recv != parts[1]) {
				continue
			}
			return fd.Doc.Text(), true
		}
	}
	return "", false
}
