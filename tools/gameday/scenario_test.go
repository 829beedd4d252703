package gameday_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idgen/idgen/tools/gameday"
)

func TestScenarioFiles(t *testing.T) {
	files, _ := filepath.Glob("scenarios/*.json")
	if len(files) < 2 {
		t.Fatalf("scenario files: %v", files)
	}
	for _, f := range files {
		if _, err := gameday.LoadScenario(f); err != nil {
			t.Error(err)
		}
	}
	sc := load(t, "default.json")
	regions := []string{"ap-northeast-1", "ap-southeast-1", "eu-west-1", "us-east-1", "us-west-2"}
	a, _ := sc.Resolve(42, regions)
	b, _ := sc.Resolve(42, regions)
	same := func(x, y []gameday.Phase) bool {
		for i := range x {
			if x[i].Region != y[i].Region {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Fatal("one seed drew two different game days")
	}
	if _, err := sc.Resolve(1, []string{"us-east-1"}); err != nil {
		t.Fatal(err)
	}
}

func TestScenarioRefused(t *testing.T) {
	base := `"generators_per_region": 2, "lease": "15s", "renew": "5s", "margin": "3s", "rate": 100, "batch": 100,
		"probe_every": "1s", "hedge_after": "50ms", "node_rate": 100, "back_home": "3s"`
	for _, tt := range []struct{ name, body, want string }{
		{"one generator", strings.Replace(base, `"generators_per_region": 2`, `"generators_per_region": 1`, 1) + `, "phases": [{"name": "s", "fault": "steady", "settle": "1s"}]`, "two or more"},
		{"unknown fault", base + `, "phases": [{"name": "x", "fault": "flood", "region": "random", "settle": "1s"}]`, `fault "flood"`},
		{"store down short of the fence", base + `, "phases": [{"name": "x", "fault": "store-down", "region": "random", "hold": "10s", "settle": "1s"}]`, "does not pass the fence"},
		{"kill without a hold", base + `, "phases": [{"name": "x", "fault": "kill", "region": "eu-west-1", "settle": "1s"}]`, "need one"},
		{"registry back before the caller is home", base + `, "phases": [{"name": "x", "fault": "registry-down", "region": "random", "hold": "5s", "settle": "4s"}]`, "to see its caller home while the registry is down"},
		{"renew too close to the lease", strings.Replace(base, `"renew": "5s"`, `"renew": "6s"`, 1) + `, "phases": [{"name": "s", "fault": "steady", "settle": "1s"}]`, "renew <= lease/3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s.json")
			if err := os.WriteFile(p, []byte(`{"name": "t", `+tt.body+`}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := gameday.LoadScenario(p); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
	sc := load(t, "short.json")
	if _, err := sc.Resolve(1, []string{"us-east-1", "us-west-2"}); err == nil || !strings.Contains(err.Error(), "eu-west-1 is not in the topology") {
		t.Fatalf("a region the topology does not have: %v", err)
	}
}
