package localstack

import (
	"context"
	"errors"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/idclient"
)

func TestPlanMakeRun(t *testing.T) {
	state := t.TempDir()
	services, err := Plan(Options{State: state, FixedPorts: true})
	if err != nil {
		t.Fatal(err)
	}
	var names, addrs []string
	for _, s := range services {
		names = append(names, s.Name)
		addrs = append(addrs, s.Addr)
		if s.HealthAddr != s.Addr && s.Name != "public-id-gateway" {
			t.Errorf("%s: health on %s, API on %s: want one listener", s.Name, s.HealthAddr, s.Addr)
		}
	}
	if want := []string{"registry", "generator-us-east-1", "generator-eu-west-1", "public-id", "public-id-gateway", "demo-orders"}; !slices.Equal(names, want) {
		t.Fatalf("services %v, want %v", names, want)
	}
	want := []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004", "127.0.0.1:7005"}
	if !slices.Equal(addrs, want) {
		t.Errorf("addresses %v, want %v", addrs, want)
	}
	if gw := GatewayAddr(services); gw != "127.0.0.1:7004" {
		t.Errorf("gateway on %s, want 127.0.0.1:7004", gw)
	}
	args := map[string]string{}
	for _, s := range services {
		args[s.Name] = strings.Join(s.Args, " ")
	}
	for name, want := range map[string]string{
		"registry": "--insecure-dev --listen 127.0.0.1:7000 --store sqlite:" + state + "/registry.db",
		"generator-eu-west-1": "--insecure-dev --clock-check warn --schedule v2 --registry http://127.0.0.1:7000 --region eu-west-1 " +
			"--listen 127.0.0.1:7002 --lease-store sqlite:" + state + "/leases-eu-west-1.db",
		"public-id": "--insecure-dev --listen 127.0.0.1:7003 --store sqlite:" + state + "/public-ids.db --resources ord,cus",
		"public-id-gateway": "--listen 127.0.0.1:7004 --metrics-listen 127.0.0.1:7006 --store sqlite:" + state + "/public-ids.db " +
			"--routes " + state + "/routes.json --deregistration-delay 0",
		"demo-orders": "--listen 127.0.0.1:7005 --db " + state + "/demo-orders.db --client-config " + state + "/client_config.json " +
			"--region us-east-1 --public-ids http://127.0.0.1:7003",
	} {
		if args[name] != want {
			t.Errorf("%s's flags:\n%s\nwant\n%s", name, args[name], want)
		}
	}
	if !slices.Equal(services[1].Needs, []string{"registry"}) || len(services[3].Needs) != 0 {
		t.Errorf("a generator needs %v, the public-ID service %v: want the registry, nothing", services[1].Needs, services[3].Needs)
	}
	routes, err := os.ReadFile(filepath.Join(state, "routes.json"))
	if err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile("../../deploy/local/routes.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(routes) != string(orig) {
		t.Errorf("on make run's ports the routes differ from deploy/local/routes.json")
	}
}

func TestPlanOptions(t *testing.T) {
	state := t.TempDir()
	services, err := Plan(Options{State: state, PublicIDStore: "redis:127.0.0.1:1", PublicIDArgs: []string{"--mapping-cache-bytes", "0"},
		GatewayArgs: []string{"--rate-per-client", "0"},
		Generators: []Generator{
			{Name: "gen-c", Region: "eu-west-1", Args: []string{"--lease", "3s"}},
			{Name: "gen-a", Region: "us-east-1", LeaseStore: "dynamodb:http://127.0.0.1:2"},
			{Name: "gen-t", Region: "us-east-1", MTLS: true, Args: []string{"--tls-cert", "c.pem"}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	byName := map[string]Service{}
	for _, s := range services {
		byName[s.Name] = s
		for _, a := range []string{s.Addr, s.HealthAddr} {
			if seen[a] != "" && seen[a] != s.Name {
				t.Errorf("%s and %s both on %s", seen[a], s.Name, a)
			}
			seen[a] = s.Name
		}
	}
	gw := GatewayAddr(services)
	if gw == "" || seen[gw] != "public-id-gateway" || slices.Contains(FixedPorts, portOf(t, gw)) {
		t.Errorf("gateway on %q: want a free port of its own", gw)
	}
	demo := strings.Join(byName["demo-orders"].Args, " ")
	if !strings.Contains(demo, "--client-config "+ClientConfigFile(state)+" --region us-east-1 ") {
		t.Errorf("the demo orders: %s: want the client config file and us-east-1, its region", demo)
	}
	// The client config's addresses: each region's first generator, gen-c and gen-a.
	if got, want := RegionAddrs(services), map[string]string{"eu-west-1": byName["gen-c"].URL(), "us-east-1": byName["gen-a"].URL()}; !maps.Equal(got, want) {
		t.Errorf("RegionAddrs: %v, want %v", got, want)
	}
	if c := strings.Join(byName["gen-c"].Args, " "); !strings.HasSuffix(c, "--lease-store sqlite:"+state+"/leases-eu-west-1.db --lease 3s") {
		t.Errorf("gen-c: %s: want the default lease store, then its own flags", c)
	}
	if a := strings.Join(byName["gen-a"].Args, " "); !strings.HasSuffix(a, "--lease-store dynamodb:http://127.0.0.1:2") {
		t.Errorf("gen-a: %s: want its lease store", a)
	}
	gt := byName["gen-t"]
	tArgs := strings.Join(gt.Args, " ")
	if slices.Contains(gt.Args, "--insecure-dev") || gt.HealthAddr == gt.Addr || !strings.Contains(tArgs, "--health-listen "+gt.HealthAddr) ||
		!strings.HasSuffix(tArgs, "--tls-cert c.pem") || gt.HealthURL() != "http://"+gt.HealthAddr+"/healthz" {
		t.Errorf("gen-t (mTLS): %s, health %s: want no --insecure-dev, a health listener of its own, its own flags last", tArgs, gt.HealthURL())
	}
	if p := strings.Join(byName["public-id"].Args, " "); !strings.Contains(p, "--store redis:127.0.0.1:1 ") || !strings.HasSuffix(p, "--mapping-cache-bytes 0") {
		t.Errorf("public-id: %s", p)
	}
	if p := strings.Join(byName["public-id-gateway"].Args, " "); !strings.Contains(p, "--store redis:127.0.0.1:1 ") || !strings.HasSuffix(p, "--rate-per-client 0") {
		t.Errorf("public-id-gateway: %s", p)
	}
	routes, err := os.ReadFile(filepath.Join(state, "routes.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(routes), "http://"+byName["demo-orders"].Addr+"/internal/orders/") || strings.Contains(string(routes), ":7005") {
		t.Errorf("the gateway's routes do not front the demo orders on %s:\n%s", byName["demo-orders"].Addr, routes)
	}
}

func TestPlanRefuses(t *testing.T) {
	state := t.TempDir()
	three := []Generator{{Region: "us-east-1"}, {Region: "eu-west-1"}, {Region: "ap-south-1"}}
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no state", Options{}, "State is required"},
		{"no generators", Options{State: state, Generators: []Generator{}}, "no generators"},
		{"no region", Options{State: state, Generators: []Generator{{Name: "g"}}}, "generator 0 has no region"},
		{"three on make run's ports", Options{State: state, FixedPorts: true, Generators: three}, "hold 2 generators, not 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Plan(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Plan: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// WriteClientConfig writes the topology's client config with the plan's generators in place of
// the regions' endpoints: each region's own generator first, then its peer's; make run's
// generators are the ones idgenctl reaches by default.
func TestWriteClientConfig(t *testing.T) {
	root := filepath.Join("..", "..")
	services, err := Plan(Options{Root: root, State: t.TempDir(), FixedPorts: true})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := PlanTopology(context.Background(), root, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := ClientConfigFile(t.TempDir())
	if err := WriteClientConfig(path, tp, RegionAddrs(services)); err != nil {
		t.Fatal(err)
	}
	cc, err := idclient.ReadClientConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	use1, euw1 := services[1].URL(), services[2].URL()
	if got := cc["us-east-1"].Endpoints; !slices.Equal(got, []string{use1, euw1}) {
		t.Errorf("us-east-1's callers: %v, want its generator then eu-west-1's", got)
	}
	if got := cc["eu-west-1"].Endpoints; !slices.Equal(got, []string{euw1, use1}) {
		t.Errorf("eu-west-1's callers: %v, want its generator then us-east-1's", got)
	}
	if got, want := MakeRunGenerators(), RegionAddrs(services); !maps.Equal(got, want) {
		t.Errorf("MakeRunGenerators: %v, want make run's plan's %v", got, want)
	}
	// A region the plan has and the stack does not run: refused, nothing written.
	other := ClientConfigFile(t.TempDir())
	if err := WriteClientConfig(other, tp, map[string]string{"us-east-1": use1}); err == nil || !strings.Contains(err.Error(), "eu-west-1") {
		t.Errorf("WriteClientConfig without eu-west-1's address: %v, want an error naming it", err)
	}
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused client config was written: %v", err)
	}
}

// The banner on make run's ports, "Try:" lines included, as make run has always printed it.
func TestBannerMakeRun(t *testing.T) {
	services, err := Plan(Options{State: t.TempDir(), FixedPorts: true})
	if err != nil {
		t.Fatal(err)
	}
	got := (&Stack{Services: services}).Banner(".idgen/logs/20260101T000000Z/")
	want := `
idgen is running locally (state in .idgen/, logs in .idgen/logs/20260101T000000Z/; clock check: warn, development only)

  registry              http://127.0.0.1:7000   regions and layouts (plaintext dev mode: you are admin)
  generator us-east-1   http://127.0.0.1:7001   REST, Connect, gRPC, /healthz, /metrics
  generator eu-west-1   http://127.0.0.1:7002
  public-id (internal)  http://127.0.0.1:7003   POST /v1/public-ids, GET /v1/public-ids/{public_id}
  gateway (customers)   http://127.0.0.1:7004   /orders/{public_id}, /customers/{public_id}/orders -> demo orders, public IDs only
  gateway (operator)    http://127.0.0.1:7006   /metrics, /healthz
  demo orders           http://127.0.0.1:7005   internal upstream: POST /internal/checkout, GET /internal/orders/{id}, ...

Try:
  curl -s -X POST http://127.0.0.1:7001/v1/ids -H 'Content-Type: application/json' -d '{}'
  curl -s -X POST http://127.0.0.1:7002/v1/ids:batch -H 'Content-Type: application/json' -d '{"count": 5}'
  curl -s http://127.0.0.1:7001/v1/ids/$(curl -s -X POST http://127.0.0.1:7002/v1/ids -H 'Content-Type: application/json' -d '{}' | sed 's/.*"id":"\([0-9]*\)".*/\1/')/decode
  curl -s http://127.0.0.1:7001/healthz
  curl -s -X POST http://127.0.0.1:7001/idgen.v1.IdService/Generate -H 'Content-Type: application/json' -d '{}'
  curl -s http://127.0.0.1:7000/v1/regions
  co=$(curl -s -X POST http://127.0.0.1:7005/internal/checkout -H 'Content-Type: application/json' -d '{"customer":"Ada","items":[{"sku":"book-1","quantity":2,"unit_cents":2100}]}'); echo "$co"
  ord=$(echo "$co" | sed 's/.*"order":"\([^"]*\)".*/\1/'); cus=$(echo "$co" | sed 's/.*"customer":"\([^"]*\)".*/\1/')
  curl -s http://127.0.0.1:7004/orders/$ord
  curl -s "http://127.0.0.1:7004/customers/$cus/orders?status=placed"
  .idgen/bin/idgenctl health --region eu-west-1
  .idgen/bin/idgenctl leases list --region us-east-1
  # make setup first for this one: it builds grpcurl into .tools/bin
  .tools/bin/grpcurl -plaintext 127.0.0.1:7001 list

Ctrl-C stops everything and releases the leases.
`
	if got != want {
		t.Errorf("banner:\n%s\nwant:\n%s", got, want)
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// No service of the stack but a generator is handed a generator's address in its flags: a
// caller takes its generators from the client config file (--client-config) and its region.
func TestCallersFromClientConfig(t *testing.T) {
	handConfigured := func(services []Service) []string {
		var out []string
		for _, s := range services {
			if s.Bin == "generator" {
				continue
			}
			for i, a := range s.Args {
				for _, g := range services {
					if g.Bin == "generator" && strings.Contains(a, g.Addr) {
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
	// The check refuses a caller configured by hand.
	byHand := []Service{
		{Name: "generator-us-east-1", Bin: "generator", Addr: "127.0.0.1:1"},
		{Name: "orders", Bin: "orders", Args: []string{"--generator", "http://127.0.0.1:1"}},
		{Name: "billing", Bin: "billing", Args: []string{"--client-config", "/state/client_config.json", "--region", "us-east-1"}},
	}
	if got := handConfigured(byHand); len(got) != 1 || got[0] != "orders: --generator http://127.0.0.1:1" {
		t.Fatalf("the check found %q in a stack with one caller configured by hand", got)
	}
	for _, fixed := range []bool{true, false} {
		services, err := Plan(Options{Root: filepath.Join("..", ".."), State: t.TempDir(), FixedPorts: fixed})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range handConfigured(services) {
			t.Errorf("%s is a caller configured by hand: give it --client-config (ClientConfigFile) and its region instead", h)
		}
	}
}
