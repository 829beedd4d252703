package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/libs/localstack/cmdline"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
)

// registry is a registry process on a fixed address and SQLite file, to be killed and started
// again.
type registry struct {
	addr, db string
	p        *proc.Proc
}

func startRegistry(t *testing.T, dir string) *registry {
	t.Helper()
	r := &registry{addr: fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)), db: filepath.Join(dir, "registry.db")}
	r.start(t)
	return r
}

func (r *registry) start(t *testing.T) {
	t.Helper()
	r.p = proc.StartT(t, proc.Spec{Bin: proc.BuildT(t, "../../registry/cmd/registry")[0], Name: "registry",
		Args: []string{"--insecure-dev", "--listen", r.addr, "--store", "sqlite:" + r.db}, HealthURL: r.url() + "/healthz"})
}

func (r *registry) url() string { return "http://" + r.addr }

func (r *registry) kill(t *testing.T) {
	t.Helper()
	_ = r.p.Kill()
	if c, err := http.Get(r.url() + "/healthz"); err == nil {
		c.Body.Close()
		t.Fatal("the registry still answers after its kill")
	}
}

func (r *registry) retire(t *testing.T, name string) {
	t.Helper()
	resp, err := http.Post(r.url()+"/v1/regions/"+name+":retire", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("retire %s: %d %s", name, resp.StatusCode, b)
	}
}

// health returns a generator's /healthz status code and body.
func health(t *testing.T, url string) (int, struct{ Status, Reason, Error string }) {
	t.Helper()
	var h struct{ Status, Reason, Error string }
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("/healthz: %v: %s", err, b)
	}
	return resp.StatusCode, h
}

// reachable returns the generator's idgen_generator_registry_reachable, or "" when absent.
func reachable(t *testing.T, url string) string {
	t.Helper()
	v, ok := testenv.Scrape(t, nil, url+"/metrics").Value("idgen_generator_registry_reachable", nil)
	if !ok {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// issueOne takes an ID from the generator and returns its region number.
func issueOne(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Post(url+"/v1/ids", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		ID idcore.ID `json:"id"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(b, &body) != nil {
		t.Fatalf("POST /v1/ids: %d %s", resp.StatusCode, b)
	}
	sched, err := idcore.ScheduleByName("v2")
	if err != nil {
		t.Fatal(err)
	}
	d, err := sched.Decode(idcore.ID(body.ID))
	if err != nil {
		t.Fatal(err)
	}
	return d.Region
}

// readCopy reads a generator's copy of the regions.
func readCopy(t *testing.T, path string) (time.Time, []region.Region) {
	t.Helper()
	var c struct {
		ReadAt  time.Time       `json:"read_at"`
		Regions []region.Region `json:"regions"`
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c.ReadAt, c.Regions
}

// TestRestartWhileRegistryDown: a generator stopped, its registry killed, and the generator
// started again with the same flags starts from the regions it read last (its copy beside its
// SQLite lease store), issues IDs of its region, and says the registry is unreachable in
// /healthz (200 degraded) and its metric; once the registry is back it is healthy again.
func TestRestartWhileRegistryDown(t *testing.T) {
	dir := t.TempDir()
	reg := startRegistry(t, dir)
	port := testenv.FreePort(t)
	args := cmdline.Generator{Registry: reg.url(), Region: "eu-west-1", LeaseStore: "sqlite:" + filepath.Join(dir, "leases.db")}
	g := startGen(t, port, args)
	if code, h := health(t, g.url); code != 200 || h.Status != "ok" {
		t.Fatalf("/healthz with the registry up: %d %+v", code, h)
	}
	if r := reachable(t, g.url); r != "1" {
		t.Fatalf("idgen_generator_registry_reachable = %q with the registry up, want 1", r)
	}
	if err := g.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	reg.kill(t)

	g = startGen(t, port, args) // waits for /healthz 200
	if n := issueOne(t, g.url); n != 2 {
		t.Fatalf("an ID of region %d, want eu-west-1's 2", n)
	}
	copyPath := filepath.Join(dir, "regions.json")
	code, h := health(t, g.url)
	if code != 200 || h.Status != "degraded" || h.Reason != "registry_unreachable" || !strings.Contains(h.Error, reg.url()) || !strings.Contains(h.Error, copyPath) {
		t.Fatalf("/healthz with the registry down: %d %+v; want 200 degraded registry_unreachable naming %s and %s", code, h, reg.url(), copyPath)
	}
	if r := reachable(t, g.url); r != "0" {
		t.Fatalf("idgen_generator_registry_reachable = %q with the registry down, want 0", r)
	}

	back := time.Now()
	reg.start(t)
	testenv.Eventually(t, 15*time.Second, func() (bool, string) {
		code, h := health(t, g.url)
		r := reachable(t, g.url)
		return code == 200 && h.Status == "ok" && r == "1", fmt.Sprintf("/healthz %d %+v, reachable %q: want ok and 1 once the registry is back", code, h, r)
	})
	if at, _ := readCopy(t, copyPath); at.Before(back) {
		t.Fatalf("the copy was read at %v, before the registry came back at %v: not replaced", at, back)
	}
	if n := issueOne(t, g.url); n != 2 {
		t.Fatalf("an ID of region %d, want 2", n)
	}
}

// startRefused runs a generator that must refuse to start, and returns its log.
func startRefused(t *testing.T, c cmdline.Generator) string {
	t.Helper()
	log := filepath.Join(t.TempDir(), "refused.log")
	c.Listen = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	all := c.Args()
	p, err := proc.Start(t.Context(), proc.Spec{Bin: generatorBin(t), Args: all, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		_ = p.Kill()
		t.Fatal("the generator did not exit within 20 s")
	}
	b, _ := os.ReadFile(log)
	if p.ExitCode() == 0 {
		t.Fatalf("exit status 0, want a refusal:\n%s", b)
	}
	return string(b)
}

// TestRegistryCopyRefusals: with the registry down, a generator refuses to start without a copy,
// with a copy older than --registry-cache-max-age, or with a copy in which its region is retired,
// each error naming the file and why. One started from a copy that said active stops (non-zero)
// once the registry is back and says its region was retired. A running generator whose region is
// retired issues on, and its copy records the retirement.
func TestRegistryCopyRefusals(t *testing.T) {
	dir := t.TempDir()
	reg := startRegistry(t, dir)
	type node struct {
		args cmdline.Generator
		copy string
	}
	mk := func(name, region string, extra ...string) node {
		d := filepath.Join(dir, name)
		return node{cmdline.Generator{Registry: reg.url(), Region: region, LeaseStore: "sqlite:" + filepath.Join(d, "leases.db"), Extra: extra},
			filepath.Join(d, "regions.json")}
	}
	stale := mk("stale", "us-west-2", "--registry-cache-max-age", "2s")
	retired := mk("retired", "eu-west-1", "--registry-refresh", "200ms")
	later := mk("later", "ap-northeast-1", "--registry-refresh", "200ms")
	var gens []*gen
	for _, n := range []node{stale, retired, later} {
		gens = append(gens, startGen(t, testenv.FreePort(t), n.args))
	}
	if err := gens[2].Stop(); err != nil { // later's copy: ap-northeast-1 active
		t.Fatal(err)
	}
	reg.retire(t, "eu-west-1")
	reg.retire(t, "ap-northeast-1")
	// The running generator of a region just retired issues on, and its copy records it.
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		_, rs := readCopy(t, retired.copy)
		r, err := region.Find(rs, "eu-west-1")
		return err == nil && r.Status == region.Retired, fmt.Sprintf("eu-west-1 in the running generator's copy: %+v", r)
	})
	if n := issueOne(t, gens[1].url); n != 2 {
		t.Fatalf("an ID of region %d, want 2", n)
	}
	for _, g := range gens[:2] {
		if err := g.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	reg.kill(t)
	time.Sleep(2500 * time.Millisecond) // stale's copy: older than its 2 s bound

	for _, tt := range []struct {
		name string
		args cmdline.Generator
		want []string
	}{
		{"no copy", mk("empty", "us-east-1").args, []string{"connection refused", "no copy of the regions at " + filepath.Join(dir, "empty", "regions.json"), "never read"}},
		{"a stale copy", stale.args, []string{"connection refused", "the copy of the regions at " + stale.copy, "older than --registry-cache-max-age 2s"}},
		{"its region retired in the copy", retired.args, []string{"refusing to start", "in the copy of the regions at " + retired.copy, "eu-west-1 (number 2) was retired"}},
		{"the copy off", mk("off", "us-west-2", "--registry-cache", "off").args, []string{"connection refused", "--registry-cache off"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log := startRefused(t, tt.args)
			for _, w := range tt.want {
				if !strings.Contains(log, w) {
					t.Errorf("the log does not say %q:\n%s", w, log)
				}
			}
		})
	}

	// later starts from its copy, which says ap-northeast-1 is active; the registry, back, says
	// it was retired meanwhile: the generator stops, as it would have refused to start.
	g := startGen(t, testenv.FreePort(t), later.args)
	if code, h := health(t, g.url); code != 200 || h.Reason != "registry_unreachable" {
		t.Fatalf("/healthz from the copy: %d %+v", code, h)
	}
	reg.start(t)
	select {
	case <-g.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("the generator started from the copy runs on in a region the registry says is retired")
	}
	if g.ExitCode() == 0 {
		t.Fatal("exit status 0 after the registry refused the region it started on")
	}
	if log, _ := os.ReadFile(g.LogFile()); !strings.Contains(string(log), "stopping: started from the copy of the regions at "+later.copy) ||
		!strings.Contains(string(log), "ap-northeast-1 (number 3) was retired") {
		t.Fatalf("the log does not say why it stopped:\n%s", log)
	}
	if _, rs := readCopy(t, later.copy); !strings.Contains(fmt.Sprint(rs), "retired") {
		t.Fatalf("its copy does not record the retirement: %+v", rs)
	}
}
