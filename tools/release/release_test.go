package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/localstack"
	"github.com/idgen/idgen/libs/localstack/cmdline"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
	"golang.org/x/mod/modfile"
)

func rootT(t *testing.T) (string, []Lib) {
	t.Helper()
	root, err := findRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	libs, err := readVersions(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, libs
}

var (
	proxyOnce sync.Once
	proxyDir  string
	cacheDir  string
	proxyErr  error
)

// standaloneEnv is the environment of a go command outside the repository: the libraries from a
// file-based module proxy of their folders here, at the versions release/versions.txt names, made
// once for the test binary (no git tag is read), third-party modules as the environment has them,
// GOWORK=off.
func standaloneEnv(t *testing.T) []string {
	t.Helper()
	root, libs := rootT(t)
	proxyOnce.Do(func() {
		proxyDir, proxyErr = os.MkdirTemp("", "idgen-proxy-")
		if proxyErr == nil {
			proxyErr = buildProxy(root, proxyDir, libs, "")
		}
		if proxyErr == nil { // kept between runs, so third-party modules are not fetched again
			if cacheDir, proxyErr = keptCache(root, "test"); proxyErr == nil {
				proxyErr = forgetLibs(cacheDir)
			}
		}
	})
	if proxyErr != nil {
		t.Fatal(proxyErr)
	}
	env, err := proxyEnv(proxyDir, cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestMain(m *testing.M) {
	code := m.Run()
	if proxyDir != "" {
		os.RemoveAll(proxyDir)
	}
	os.Exit(code)
}

// copyModule copies the module folder src into an empty temporary folder, as a team copies it,
// without the go.sum lines of the libraries: those are the tagged releases' hashes, which the
// folders here match only at a release; the go command adds the served zips' own.
func copyModule(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == "go.sum" {
			b = regexp.MustCompile(`(?m)^github\.com/idgen/idgen/.*\n`).ReplaceAll(b, nil)
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// TestRequirementsAreReleases: every module of the repository that requires a library requires
// it at the version release/versions.txt names (the version scripts/release.sh released), and
// the libraries and examples/orders replace none of them with a folder, since a copy or a
// caller outside the repository could not.
func TestRequirementsAreReleases(t *testing.T) {
	root, libs := rootT(t)
	want := map[string]string{}
	released := map[string]bool{}
	for _, l := range libs {
		want[l.Path] = l.Version
		released[l.Dir] = true
	}
	mods, err := filepath.Glob(filepath.Join(root, "*", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, glob := range []string{"*/*/go.mod", "*/*/*/go.mod"} {
		more, _ := filepath.Glob(filepath.Join(root, glob))
		mods = append(mods, more...)
	}
	for _, gm := range mods {
		b, err := os.ReadFile(gm)
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.ParseLax(gm, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		dir, _ := filepath.Rel(root, filepath.Dir(gm))
		for _, r := range f.Require {
			if v, ok := want[r.Mod.Path]; ok && r.Mod.Version != v {
				t.Errorf("%s requires %s %s; the release is %s (scripts/release.sh sets it)", dir, r.Mod.Path, r.Mod.Version, v)
			}
		}
		if released[dir] || strings.HasPrefix(dir, "examples/") {
			for _, r := range f.Replace {
				if _, ok := want[r.Old.Path]; ok {
					t.Errorf("%s replaces %s with %s: a module outside the repository cannot; go.work does it here", dir, r.Old.Path, r.New.Path)
				}
			}
		}
	}
}

// TestAPICompatibleWithLastRelease: each library's exported API, as it is here, is compatible
// with its last release's (release/api/DIR/VERSION.apidiff, written by scripts/release.sh), or
// the library's module path names a new major version.
func TestAPICompatibleWithLastRelease(t *testing.T) {
	root, libs := rootT(t)
	apidiff, err := apidiffBin(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		report, err := checkAPI(apidiff, root, l, filepath.Join(root, l.Dir), nil)
		if err != nil {
			t.Error(err)
			continue
		}
		t.Log(report)
	}
}

// TestAPICheckFailsOnBreak plants changes in a copy of libs/uuidv7 outside the repository and
// runs the check on it: a removed or changed exported function fails it, naming the function;
// an added one passes; and a removal passes under a new major version's module path.
func TestAPICheckFailsOnBreak(t *testing.T) {
	root, libs := rootT(t)
	apidiff, err := apidiffBin(root)
	if err != nil {
		t.Fatal(err)
	}
	var lib Lib
	for _, l := range libs {
		if l.Dir == "libs/uuidv7" {
			lib = l
		}
	}
	const compare = "func Compare(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }"
	const removed = "var _ = bytes.Compare // the file's import of bytes stays used"
	env := standaloneEnv(t)
	for _, tt := range []struct {
		name, old, new, module string
		want                   string // "" when the check passes
	}{
		{"removed", compare, removed, "", "Compare: removed"},
		{"changed", compare, "func Compare(a, b uuid.UUID) bool { return bytes.Compare(a[:], b[:]) < 0 }", "", "Compare: changed from"},
		{"added", compare, compare + "\n\nfunc Equal(a, b uuid.UUID) bool { return a == b }", "", ""},
		{"removed under /v2", compare, removed, lib.Path + "/v2", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyModule(t, filepath.Join(root, lib.Dir))
			src := filepath.Join(dir, "uuidv7.go")
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.old) {
				t.Fatalf("uuidv7.go has no %q to change", tt.old)
			}
			b = []byte(strings.Replace(string(b), tt.old, tt.new, 1))
			if err := os.WriteFile(src, b, 0o644); err != nil {
				t.Fatal(err)
			}
			// The example tests call Compare; only the package's own API is compared.
			os.Remove(filepath.Join(dir, "example_test.go"))
			if tt.module != "" {
				goCmd(t, dir, env, "mod", "edit", "-module", tt.module)
			}
			goCmd(t, dir, env, "build", "./...")
			report, err := checkAPI(apidiff, root, lib, dir, env)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("the check failed: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("the check passed (%s); want a failure naming %q", report, tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("the check failed with %v; want %q in it", err, tt.want)
			}
			t.Logf("%s: error %v; report %q", tt.name, err, report)
		})
	}
}

// TestExampleBuildsWhereCopied copies examples/orders into an empty folder outside the
// repository and does there what its README's "Copy it" section says: go mod tidy, then go run
// ./cmd/demo-orders against a generator per region and the public-ID service (real processes,
// as the example's own tests start them), and a checkout answers with public IDs. The
// libraries come from a file-based module proxy of their folders here at the released
// versions; nothing of the repository is reachable from the copy. Without --public-ids the
// command stops, naming the flag.
func TestExampleBuildsWhereCopied(t *testing.T) {
	root, _ := rootT(t)
	env := standaloneEnv(t)
	dir := copyModule(t, filepath.Join(root, "examples", "orders"))
	goCmd(t, dir, env, "mod", "tidy")
	goCmd(t, dir, env, "vet", "./...")

	gen := proc.BuildT(t, "../../services/generator/cmd/generator")[0]
	startGen := func(region string) string {
		addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
		proc.StartT(t, proc.Spec{Bin: gen, HealthURL: "http://" + addr + "/healthz", Args: cmdline.Generator{Region: region,
			Listen: addr, LeaseStore: "sqlite:" + filepath.Join(t.TempDir(), "leases.db")}.Args()})
		return "http://" + addr
	}
	use1, euw1 := startGen("us-east-1"), startGen("eu-west-1")
	pubBin := proc.BuildT(t, "../../services/public-id/cmd/public-id")[0]
	r := testenv.StartRedis(t, t.TempDir())
	pubAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	proc.StartT(t, proc.Spec{Bin: pubBin, HealthURL: "http://" + pubAddr + "/healthz", Args: cmdline.PublicID{Listen: pubAddr,
		Store: "redis:" + r.Addr, Resources: "ord,cus", Extra: []string{"--default-resource", "ord"}}.Args()})

	// The callers' client config as the local stack writes it, from the topology's plan.
	tp, err := localstack.PlanTopology(context.Background(), root, nil)
	if err != nil {
		t.Fatal(err)
	}
	cc := localstack.ClientConfigFile(dir)
	if err := localstack.WriteClientConfig(cc, tp, map[string]string{"us-east-1": use1, "eu-west-1": euw1}); err != nil {
		t.Fatal(err)
	}

	// Without --public-ids: no default service to publish to.
	cmd := exec.Command("go", "run", "./cmd/demo-orders", "--db", "orders.db", "--client-config", cc, "--region", "us-east-1")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "--public-ids is required") {
		t.Errorf("demo-orders without --public-ids: %v\n%s\nwant a refusal naming --public-ids", err, out)
	}

	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	proc.StartT(t, proc.Spec{Bin: "go", Dir: dir, Env: env, Group: true, HealthTimeout: 5 * time.Minute,
		HealthURL: "http://" + addr + "/healthz", Name: "demo-orders (go run, copied)",
		Args: []string{"run", "./cmd/demo-orders", "--listen", addr, "--db", "orders.db",
			"--client-config", cc, "--region", "us-east-1", "--public-ids", "http://" + pubAddr}})
	resp, err := http.Post("http://"+addr+"/internal/checkout", "application/json",
		strings.NewReader(`{"customer":"Ada","items":[{"sku":"book-1","quantity":2,"unit_cents":2100}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct{ Order, Customer string }
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusCreated ||
		!strings.HasPrefix(got.Order, "ord_") || !strings.HasPrefix(got.Customer, "cus_") {
		t.Fatalf("checkout on the copy: %d %+v %v; want 201 with an ord_ and a cus_ public ID", resp.StatusCode, got, err)
	}
	t.Logf("the copy in %s answered %+v", dir, got)
}

// TestCallersDoNotGetTestenv: a module outside the repository that requires one library at its
// release has no libs/testenv (the test fixtures) in its module graph (go list -m all): the
// libraries' tests that start real servers live in test-only modules of their own
// (libs/idclient/e2e, libs/idcore/e2e, libs/svc/e2e), which nobody requires, and the libraries'
// own tests (libs/svc/auth's, libs/localstack/proc's) do without it.
func TestCallersDoNotGetTestenv(t *testing.T) {
	_, libs := rootT(t)
	env := standaloneEnv(t)
	var testenvPath string
	for _, l := range libs {
		if l.Dir == "libs/testenv" {
			testenvPath = l.Path
		}
	}
	for _, l := range libs {
		if l.Path == testenvPath {
			continue
		}
		t.Run(l.Dir, func(t *testing.T) {
			dir := t.TempDir()
			goCmd(t, dir, env, "mod", "init", "example.com/caller")
			goCmd(t, dir, env, "get", l.Path+"@"+l.Version)
			for _, edge := range strings.Split(goCmd(t, dir, env, "mod", "graph"), "\n") {
				if from, to, ok := strings.Cut(edge, " "); ok && strings.HasPrefix(to, testenvPath+"@") {
					t.Errorf("%s requires %s: a caller of %s gets the test fixtures in its module graph", from, to, l.Path)
				}
			}
			for _, m := range strings.Fields(goCmd(t, dir, env, "list", "-m", "all")) {
				if m == testenvPath {
					t.Errorf("%s is in the module graph of a caller of %s", testenvPath, l.Path)
				}
			}
		})
	}
}

// TestVersionsInDependencyOrder: each library of release/versions.txt requires only libraries
// listed before it. scripts/release.sh tidies them in that order, so that each one's go.sum
// holds the hashes of the ones it requires as they will be tagged; a requirement cycle between
// libraries would leave no such order (each go.sum would hold the hash of a zip holding the
// other's go.sum), and fails here naming the requirement.
func TestVersionsInDependencyOrder(t *testing.T) {
	root, libs := rootT(t)
	pos := map[string]int{}
	for i, l := range libs {
		pos[l.Path] = i
	}
	for i, l := range libs {
		gm := filepath.Join(root, l.Dir, "go.mod")
		b, err := os.ReadFile(gm)
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.ParseLax(gm, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range f.Require {
			if j, ok := pos[r.Mod.Path]; ok && j >= i {
				t.Errorf("%s requires %s, which release/versions.txt lists after it: a library comes after the ones it requires, and libraries require each other in no cycle", l.Dir, libs[j].Dir)
			}
		}
	}
}
