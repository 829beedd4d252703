package topology_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/topology"
)

func module(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../infra/terraform/modules/topology")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlanDefaults plans the real module with its defaults and no cache, then with a cache: the
// second plan of the same module and variables is read from it (its Terraform does not exist).
func TestPlanDefaults(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	tp, err := topology.Plan(ctx, topology.Options{Module: module(t), CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tp.RegionNames(), " "); got != "ap-northeast-1 ap-southeast-1 eu-west-1 us-east-1 us-west-2" {
		t.Fatalf("regions %s", got)
	}
	eu := tp.Regions["eu-west-1"]
	if eu.Number != 2 || eu.Peer != "us-east-1" || eu.PeerNumber != 0 || eu.Endpoint != "https://idgen.eu-west-1.idgen.internal:443" {
		t.Fatalf("eu-west-1: %+v", eu)
	}
	want := "https://idgen.eu-west-1.idgen.internal:443 https://idgen.us-east-1.idgen.internal:443"
	if got := strings.Join(tp.ClientConfig["eu-west-1"].Endpoints, " "); got != want {
		t.Fatalf("eu-west-1's client config %s, want %s", got, want)
	}
	if tp.HomeRegion != "us-east-1" {
		t.Fatalf("home region %q", tp.HomeRegion)
	}

	start := time.Now()
	again, err := topology.Plan(ctx, topology.Options{Module: module(t), CacheDir: cache, Terraform: "/nonexistent/terraform"})
	if err != nil {
		t.Fatalf("the second plan was not read from the cache: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the cached plan took %v", d)
	}
	if strings.Join(again.ClientConfig["eu-west-1"].Endpoints, " ") != want {
		t.Fatalf("cached client config %v", again.ClientConfig)
	}
	// Other variables are another plan: not in the cache, so the missing Terraform is reached.
	_, err = topology.Plan(ctx, topology.Options{Module: module(t), CacheDir: cache, Terraform: "/nonexistent/terraform",
		Vars: map[string]any{"endpoint_port": 8443}})
	if err == nil {
		t.Fatal("other variables were served from the cache")
	}

	addrs := map[string]string{}
	for i, n := range tp.RegionNames() {
		addrs[n] = "http://127.0.0." + string(rune('2'+i)) + ":7100"
	}
	local, err := tp.Localize(addrs)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(local["eu-west-1"].Endpoints, " "); got != addrs["eu-west-1"]+" "+addrs["us-east-1"] {
		t.Fatalf("localized eu-west-1: %s", got)
	}
	delete(addrs, "us-east-1")
	if _, err := tp.Localize(addrs); err == nil || !strings.Contains(err.Error(), "no local address for region us-east-1") {
		t.Fatalf("a region without an address: %v", err)
	}
}

// TestPlanRefused: a peer that is not a region fails the plan with Terraform's message naming
// the region; once the peer is one, the plan localizes to the given addresses.
func TestPlanRefused(t *testing.T) {
	regions := map[string]any{
		"us-east-1": map[string]any{"number": 0, "peer": "eu-west-1"},
		"eu-west-1": map[string]any{"number": 2, "peer": "mars-1"},
	}
	_, err := topology.Plan(context.Background(), topology.Options{Module: module(t), CacheDir: "-", Vars: map[string]any{"regions": regions}})
	if !errors.Is(err, topology.ErrPlan) || !strings.Contains(err.Error(), "region eu-west-1 has peer mars-1, which is not a region in this map") {
		t.Fatalf("got %v, want the plan refused naming eu-west-1", err)
	}

	regions["eu-west-1"] = map[string]any{"number": 2, "peer": "us-east-1"}
	tp, err := topology.Plan(context.Background(), topology.Options{Module: module(t), CacheDir: "-", Vars: map[string]any{"regions": regions}})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := tp.Localize(map[string]string{"us-east-1": "http://127.0.0.1:1", "eu-west-1": "http://127.0.0.1:2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cc["us-east-1"].Endpoints, " "); got != "http://127.0.0.1:1 http://127.0.0.1:2" || len(tp.Regions) != 2 {
		t.Fatalf("localized us-east-1 %s, regions %v", got, tp.Regions)
	}
}
