package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/idgen/idgen/libs/conn/dynamo"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/localstack/dynalite"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
	"github.com/idgen/idgen/services/public-id/mapping/regions"
)

// The regions of these tests: a pair (r1, r2) and one more (r3, whose peer is r1).
var (
	regionNames = []string{"r1", "r2", "r3"}
	regionPeers = map[string]string{"r1": "r2", "r2": "r1", "r3": "r1"}
)

// region is one region of the platform as processes: its store of record (dynalite), its
// internal API and its gateway, on the regions file every process shares.
type region struct {
	name   string
	number int
	db     *testenv.Dynalite
	dbPort int
	gw     *gw
	file   string
	routes string
}

type platform struct {
	t       testing.TB
	regions map[string]*region
	seq     int64
	mu      sync.Mutex
}

// startPlatform starts every region: a dynalite with the table, the internal API and the gateway
// with --store regions:FILE, in front of one upstream that answers an order for any internal ID.
func startPlatform(t testing.TB) *platform {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"%s","note":"ok"}`, strings.TrimPrefix(req.URL.Path, "/internal/order/"))
	}))
	t.Cleanup(up.Close)
	routes := limitRoutesFile(t, limitRoute("order", up.URL, ""))
	p := &platform{t: t, regions: map[string]*region{}}
	for i, n := range regionNames {
		p.regions[n] = &region{name: n, number: i + 1, dbPort: testenv.FreePort(t), routes: routes}
	}
	for _, n := range regionNames {
		p.startStore(n)
	}
	for _, n := range regionNames {
		p.writeFile(n)
		p.startAPI(n)
	}
	for _, n := range regionNames {
		p.startGateway(n)
	}
	return p
}

// startStore starts region n's dynalite on its port, empty, and makes the table.
func (p *platform) startStore(n string) {
	p.t.Helper()
	r := p.regions[n]
	d, err := dynalite.Start(context.Background(), dynalite.Options{Port: r.dbPort, Tables: []dynalite.Tables{dynamomap.Tables(dynamomap.DefaultTable)}})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(d.Stop)
	r.db = &testenv.Dynalite{Server: d}
}

func (p *platform) writeFile(n string) {
	p.t.Helper()
	f := regions.File{Region: n}
	for _, m := range regionNames {
		r := p.regions[m]
		f.Regions = append(f.Regions, regions.FileRegion{Name: m, Number: r.number, Peer: regionPeers[m],
			Endpoint: fmt.Sprintf("http://127.0.0.1:%d", r.dbPort)})
	}
	path := filepath.Join(p.t.TempDir(), n+"-regions.json")
	if err := f.WriteFile(path); err != nil {
		p.t.Fatal(err)
	}
	p.regions[n].file = path
}

// startProcesses starts region n's internal API and gateway.
func (p *platform) startProcesses(n string) {
	p.t.Helper()
	p.startAPI(n)
	p.startGateway(n)
}

// startAPI starts region n's internal API, which fills the region when it came back empty: it is
// healthy once the region is filled.
func (p *platform) startAPI(n string) {
	p.t.Helper()
	r := p.regions[n]
	apiPort := testenv.FreePort(p.t)
	g := &gw{api: fmt.Sprintf("http://127.0.0.1:%d", apiPort)}
	g.apiProc = proc.StartT(p.t, proc.Spec{Bin: publicIDBin(p.t), Name: n + "-public-id", HealthURL: g.api + "/healthz",
		Args: []string{"--insecure-dev", "--listen", fmt.Sprintf("127.0.0.1:%d", apiPort), "--store", "regions:" + r.file, "--resources", "ord,cus",
			"--store-timeout", "500ms", "--deregistration-delay", "0"}})
	r.gw = g
}

// startGateway starts region n's gateway (after its internal API).
func (p *platform) startGateway(n string) {
	p.t.Helper()
	r := p.regions[n]
	g := r.gw
	store := "regions:" + r.file
	// The ports are picked as the gateway starts: picked earlier, another process could take one.
	gwPort, opsPort := fmt.Sprint(testenv.FreePort(p.t)), fmt.Sprint(testenv.FreePort(p.t))
	g.url, g.ops = "http://127.0.0.1:"+gwPort, "http://127.0.0.1:"+opsPort
	g.p = proc.StartT(p.t, proc.Spec{Bin: gatewayBin(p.t), Name: n + "-gateway", HealthURL: g.url + "/healthz",
		Args: []string{"--listen", "127.0.0.1:" + gwPort, "--metrics-listen", "127.0.0.1:" + opsPort,
			"--store", store, "--routes", r.routes, "--rate-per-client", "0", "--deregistration-delay", "0", "--store-timeout", "500ms"}})
}

// id is a new v2 internal ID made in region n.
func (p *platform) id(n string) int64 {
	p.mu.Lock()
	p.seq++
	seq := p.seq
	p.mu.Unlock()
	id, err := idcore.ScheduleV2().Compose(idcore.Parts{Timestamp: time.Since(idcore.Epoch).Milliseconds(), Region: p.regions[n].number,
		Machine: int(seq>>10) % 512, Sequence: int(seq % 1024)})
	if err != nil {
		p.t.Fatal(err)
	}
	return int64(id)
}

// publish publishes an internal ID through region n's internal API.
func (p *platform) publish(n string, id int64) (string, int, error) {
	resp, err := http.Post(p.regions[n].gw.api+"/v1/public-ids", "application/json",
		strings.NewReader(fmt.Sprintf(`{"internal_id":"%d","resource":"ord"}`, id)))
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	var out struct {
		PublicID string `json:"public_id"`
		Reason   string `json:"reason"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != 200 {
		return "", resp.StatusCode, fmt.Errorf("publish %d in %s: %d %s", id, n, resp.StatusCode, out.Reason)
	}
	return out.PublicID, 200, nil
}

// order is what a customer of region n gets for a public ID: the status and the order's id.
func (p *platform) order(n, pub string) (int, string) {
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(p.regions[n].gw.url + "/order/" + pub)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var out struct {
		ID string `json:"id"`
	}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &out)
	if out.ID == "" {
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	return resp.StatusCode, out.ID
}

func healthz(url string) (int, string) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url + "/healthz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestRegionsResolveEverywhere: a public ID published through any region's internal API opens
// for a customer at every region's gateway at once (the next request, no wait), and an unknown
// one is the same 404 in every region.
func TestRegionsResolveEverywhere(t *testing.T) {
	p := startPlatform(t)
	for _, from := range regionNames {
		for _, owner := range regionNames {
			id := p.id(owner)
			pub, _, err := p.publish(from, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range regionNames {
				if code, got := p.order(n, pub); code != 200 || got != pub {
					t.Fatalf("published in %s (owner %s), opened in %s: %d %s", from, owner, n, code, got)
				}
			}
		}
	}
	unknown := "ord_" + strings.Repeat("A", 22)
	var bodies []string
	for _, n := range regionNames {
		code, body := p.order(n, unknown)
		if code != 404 {
			t.Fatalf("unknown in %s: %d %s", n, code, body)
		}
		bodies = append(bodies, body)
	}
	if len(slices.Compact(slices.Clone(bodies))) != 1 {
		t.Errorf("the unknown ID's 404 differs between regions: %q", bodies)
	}
}

// TestRegionLostForGood: r2 is lost for good (its processes and its store killed, its data
// gone). Every acknowledged public ID opens in r1 and r3, and publishing goes on there; r2 comes
// back empty, reports not ready until it is filled from the others, and then opens every one.
func TestRegionLostForGood(t *testing.T) {
	p := startPlatform(t)
	acked := map[string]int64{}
	for i := range 60 {
		from, owner := regionNames[i%3], regionNames[(i/3)%3]
		id := p.id(owner)
		pub, _, err := p.publish(from, id)
		if err != nil {
			t.Fatal(err)
		}
		acked[pub] = id
	}
	r2 := p.regions["r2"]
	_ = r2.gw.p.Kill()
	_ = r2.gw.apiProc.Kill()
	r2.db.Kill()
	resolved := 0
	for _, n := range []string{"r1", "r3"} {
		for pub := range acked {
			if code, got := p.order(n, pub); code != 200 || got != pub {
				t.Fatalf("r2 lost: %s in %s: %d %s", pub, n, code, got)
			}
			resolved++
		}
	}
	for i := range 30 {
		from, owner := []string{"r1", "r3"}[i%2], regionNames[i%3]
		id := p.id(owner)
		pub, _, err := p.publish(from, id)
		if err != nil {
			t.Fatalf("r2 lost: %v", err)
		}
		acked[pub] = id
	}
	// r2 comes back empty: a new store (the table made again, no data) and new processes.
	p.startStore("r2")
	p.startProcesses("r2")
	for pub := range acked {
		if code, got := p.order("r2", pub); code != 200 || got != pub {
			t.Fatalf("r2 back: %s: %d %s", pub, code, got)
		}
	}
	t.Logf("acknowledged %d; resolved %d times in r1 and r3 while r2 was lost, and all %d in r2 once filled; lost 0", len(acked), resolved, len(acked))
}

// TestRegionComesBackNotReady: a region that comes back empty answers /healthz 503
// region_filling and refuses publishes until its fill is done, which a frozen source holds up.
func TestRegionComesBackNotReady(t *testing.T) {
	p := startPlatform(t)
	for i := range 10 {
		if _, _, err := p.publish("r1", p.id(regionNames[i%3])); err != nil {
			t.Fatal(err)
		}
	}
	r3 := p.regions["r3"]
	_ = r3.gw.p.Kill()
	_ = r3.gw.apiProc.Kill()
	r3.db.Kill()
	p.startStore("r3")
	p.regions["r1"].db.Freeze() // the fill cannot copy r1's mappings
	t.Cleanup(p.regions["r1"].db.Thaw)
	apiPort := testenv.FreePort(t)
	api := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	pr := proc.StartT(t, proc.Spec{Bin: publicIDBin(t), Name: "r3-public-id-back",
		Args: []string{"--insecure-dev", "--listen", fmt.Sprintf("127.0.0.1:%d", apiPort), "--store", "regions:" + r3.file, "--resources", "ord",
			"--store-timeout", "300ms", "--deregistration-delay", "0"}})
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		code, body := healthz(api)
		return code == 503 && strings.Contains(body, "region_filling"), fmt.Sprint(code, body)
	})
	resp, err := http.Post(api+"/v1/public-ids", "application/json", strings.NewReader(fmt.Sprintf(`{"internal_id":"%d"}`, p.id("r3"))))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "region_filling") {
		t.Fatalf("a publish while filling: %d %s", resp.StatusCode, b)
	}
	p.regions["r1"].db.Thaw()
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		code, body := healthz(api)
		return code == 200, fmt.Sprint(code, body)
	})
	_ = pr
}

// TestRegionStoreFrozen: r1's store frozen (SIGSTOP), r1's gateway still opens r1's orders
// (from the peer's copy, r2) within the route's timeout, and r1's internal API still publishes
// (chosen and held elsewhere).
func TestRegionStoreFrozen(t *testing.T) {
	p := startPlatform(t)
	id := p.id("r1")
	pub, _, err := p.publish("r1", id)
	if err != nil {
		t.Fatal(err)
	}
	p.regions["r1"].db.Freeze()
	t.Cleanup(p.regions["r1"].db.Thaw)
	start := time.Now()
	if code, got := p.order("r1", pub); code != 200 || got != pub {
		t.Fatalf("r1's store frozen: %d %s", code, got)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("r1's store frozen: the order took %v", took)
	}
	other, _, err := p.publish("r1", p.id("r1"))
	if err != nil {
		t.Fatalf("r1's store frozen: %v\n%s", err, p.regions["r1"].gw.apiProc.Tail(20))
	}
	for _, n := range regionNames {
		if code, got := p.order(n, other); code != 200 || got != other {
			t.Fatalf("published while r1's store was frozen, opened in %s: %d %s", n, code, got)
		}
	}
}

// TestRegionTableMadeAgain: r3's table deleted and made again, empty, while its processes run:
// within the fill note's reading (10 s) r3 stops taking customers (503 region_filling), fills
// itself again from the others, and then holds and opens every mapping it should.
func TestRegionTableMadeAgain(t *testing.T) {
	p := startPlatform(t)
	acked := map[string]int64{}
	for i := range 12 {
		id := p.id(regionNames[i%3])
		pub, _, err := p.publish("r1", id)
		if err != nil {
			t.Fatal(err)
		}
		acked[pub] = id
	}
	ctx := context.Background()
	db, err := dynamo.NewClient(ctx, p.regions["r3"].db.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(dynamomap.DefaultTable)}); err != nil {
		t.Fatal(err)
	}
	gone := dynamodb.NewTableNotExistsWaiter(db)
	if err := gone.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(dynamomap.DefaultTable)}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := dynamomap.CreateTable(ctx, db, dynamomap.DefaultTable); err != nil {
		t.Fatal(err)
	}
	api := p.regions["r3"].gw.api
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		code, body := healthz(api)
		return code == 503 && strings.Contains(body, "region_filling"), fmt.Sprint(code, body)
	})
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		code, body := healthz(api)
		return code == 200, fmt.Sprint(code, body)
	})
	own, err := dynamomap.Open(ctx, dynamomap.Target{Endpoint: p.regions["r3"].db.Endpoint}, dynamomap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	for pub, id := range acked {
		owner := regionNames[0]
		for _, n := range regionNames {
			if p.regions[n].number == ownerNumber(id) {
				owner = n
			}
		}
		if owner == "r3" || regionPeers[owner] == "r3" {
			if got, err := own.Resolve(ctx, pub); err != nil || got != id {
				t.Errorf("r3's table made again, after its fill: %s: %d, %v", pub, got, err)
			}
		}
		if code, got := p.order("r3", pub); code != 200 || got != pub {
			t.Errorf("r3 after its fill: %s: %d %s", pub, code, got)
		}
	}
}

func ownerNumber(id int64) int {
	d, _ := idcore.ScheduleV2().Decode(idcore.ID(id))
	return d.Region
}
