package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/clocktest"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/generator/internal/config"
	"github.com/idgen/idgen/services/generator/internal/server"
)

type running struct {
	url    string
	srv    *server.Server
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// stop shuts the server down (gracefully) and waits for Serve to return; safe to call twice.
func (r *running) stop() error {
	r.once.Do(func() { r.cancel(); r.err = <-r.done })
	return r.err
}

func baseConfig(t testing.TB) config.Config {
	t.Helper()
	cfg, err := config.Parse([]string{"--insecure-dev", "--lease-store", "sqlite:" + filepath.Join(t.TempDir(), "leases.db"),
		"--lease", "3s", "--renew", "500ms", "--fence-margin", "500ms", "--drain", "5s"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// start runs a generator on a real loopback socket until the test ends.
func start(t testing.TB, cfg config.Config, opts ...server.Option) *running {
	t.Helper()
	if len(opts) == 0 {
		opts = []server.Option{server.WithClockHealth(clocktest.Synced())}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, cfg, log, opts...)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &running{url: "http://" + l.Addr().String(), srv: srv, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- srv.Serve(ctx, func() (net.Listener, error) { return l, nil }, nil) }()
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *running) waitReady(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.srv.Node().WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestREST(t *testing.T) {
	r := start(t, baseConfig(t))
	r.waitReady(t)
	tests := []struct {
		name, method, path, body string
		status                   int
		contains                 string
	}{
		{"one id", "POST", "/v1/ids", "{}", 200, `"id":"`},
		{"one id with id_num", "POST", "/v1/ids", `{"id_num":true}`, 200, `"id_num":`},
		{"one id, id_num not a bool", "POST", "/v1/ids", `{"id_num":1}`, 400, `"id_num"`},
		{"one id, empty body", "POST", "/v1/ids", "", 200, `"id":"`},
		{"one id, not JSON", "POST", "/v1/ids", "hello", 400, "not a valid JSON object"},
		{"one id, unknown field", "POST", "/v1/ids", `{"n":1}`, 400, "unknown field"},
		{"batch of 1000", "POST", "/v1/ids:batch", `{"count":1000}`, 200, `"ids":["`},
		{"batch of 0", "POST", "/v1/ids:batch", `{"count":0}`, 400, "from 1 to 1000"},
		{"batch of 1001", "POST", "/v1/ids:batch", `{"count":1001}`, 400, "from 1 to 1000"},
		{"batch of -1", "POST", "/v1/ids:batch", `{"count":-1}`, 400, "from 1 to 1000"},
		{"batch of abc", "POST", "/v1/ids:batch", `{"count":"abc"}`, 400, `"count" must be an integer`},
		{"batch of 1.5", "POST", "/v1/ids:batch", `{"count":1.5}`, 400, `"count" must be an integer`},
		{"batch, no count", "POST", "/v1/ids:batch", `{}`, 400, `"count" is missing`},
		{"batch, missing body", "POST", "/v1/ids:batch", ``, 400, "body is missing"},
		{"batch, not JSON", "POST", "/v1/ids:batch", `count=5`, 400, "not a valid JSON object"},
		{"batch, two values", "POST", "/v1/ids:batch", `{"count":5}{"count":6}`, 400, "more than one JSON value"},
		{"batch, body too large", "POST", "/v1/ids:batch", `{"count":5,"pad":"` + strings.Repeat("x", 5000) + `"}`, 413, "larger than the limit of 4096 bytes"},
		{"decode", "GET", "/v1/ids/97301141913751557/decode", "", 200, `"created_at":"2026-09-26T12:00:00.000Z"`},
		{"decode non-numeric", "GET", "/v1/ids/abc/decode", "", 400, "not a decimal number"},
		{"decode negative", "GET", "/v1/ids/-1/decode", "", 400, "negative"},
		{"decode above 2^63-1", "GET", "/v1/ids/9223372036854775808/decode", "", 400, "above 2^63-1"},
		{"decode far above", "GET", "/v1/ids/99999999999999999999999/decode", "", 400, "longer than 19 digits"},
		{"unknown route", "GET", "/v2/ids", "", 404, "Not Found"},
		{"wrong method", "GET", "/v1/ids:batch", "", 405, "Method Not Allowed"},
		{"wrong method on decode", "DELETE", "/v1/ids/5/decode", "", 405, "Method Not Allowed"},
		{"healthz", "GET", "/healthz", "", 200, `"status":"ok"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, hdr, body := testenv.Do(t, tt.method, r.url+tt.path, "", tt.body)
			var e struct {
				Error string `json:"error"`
			}
			_ = json.Unmarshal([]byte(body), &e)
			if code != tt.status || !strings.Contains(body+e.Error, tt.contains) {
				t.Fatalf("%s %s: %d %s, want %d containing %q", tt.method, tt.path, code, body, tt.status, tt.contains)
			}
			if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("Content-Type %q", ct)
			}
		})
	}
}

func TestRESTShapes(t *testing.T) {
	r := start(t, baseConfig(t))
	r.waitReady(t)
	// By default the ID is a string alone: a JSON number above 2^53 is another value after
	// JSON.parse in JavaScript, and every v2 ID is above it.
	_, _, body := testenv.Do(t, "POST", r.url+"/v1/ids", "", "{}")
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &fields); err != nil || len(fields) != 1 || fields["id"] == nil {
		t.Fatalf("POST /v1/ids {} = %s (%v), want only \"id\"", body, err)
	}
	for _, req := range []string{`{"id_num":true}`, ` {"id_num": true} `} {
		_, _, body = testenv.Do(t, "POST", r.url+"/v1/ids", "", req)
		var one struct {
			ID    string `json:"id"`
			IDNum int64  `json:"id_num"`
		}
		if err := json.Unmarshal([]byte(body), &one); err != nil || one.IDNum == 0 || strconv.FormatInt(one.IDNum, 10) != one.ID {
			t.Fatalf("POST /v1/ids %s = %s (%v)", req, body, err)
		}
	}
	if _, _, body = testenv.Do(t, "POST", r.url+"/v1/ids", "", `{"id_num":false}`); strings.Contains(body, "id_num") {
		t.Fatalf(`POST /v1/ids {"id_num":false} = %s`, body)
	}
	_, _, body = testenv.Do(t, "POST", r.url+"/v1/ids:batch", "", `{"count":1000}`)
	var batch struct {
		IDs []idcore.ID `json:"ids"`
	}
	if err := json.Unmarshal([]byte(body), &batch); err != nil || len(batch.IDs) != 1000 {
		t.Fatalf("batch: %d ids, %v", len(batch.IDs), err)
	}
	for i := 1; i < len(batch.IDs); i++ {
		if batch.IDs[i] <= batch.IDs[i-1] {
			t.Fatalf("batch not strictly increasing at %d", i)
		}
	}
	if !strings.Contains(body, `"ids":["`) {
		t.Fatal("ids are not strings")
	}
	// A v2 ID decodes with its region; the server's region is us-east-1 (number 0).
	_, _, body = testenv.Do(t, "GET", r.url+"/v1/ids/"+batch.IDs[0].String()+"/decode", "", "")
	var d map[string]any
	_ = json.Unmarshal([]byte(body), &d)
	if d["layout"] != "v2" || d["region"] != "us-east-1" || d["region_number"] != float64(0) || d["id"] != batch.IDs[0].String() {
		t.Fatalf("decode = %s", body)
	}
	// Under v1-v2 an ID from 2026 is v1 and has no region fields.
	cfg := baseConfig(t)
	cfg.Schedule = "v1-v2"
	r2 := start(t, cfg)
	_, _, body = testenv.Do(t, "GET", r2.url+"/v1/ids/97301141913751557/decode", "", "")
	if !strings.Contains(body, `"layout":"v1"`) || !strings.Contains(body, `"machine":37`) || strings.Contains(body, "region") {
		t.Fatalf("v1 decode = %s", body)
	}
}

// clients returns the same IdService client over the Connect, gRPC and gRPC-Web protocols.
func clients(url string) map[string]idgenv1connect.IdServiceClient {
	hc := idclient.H2CClient()
	return map[string]idgenv1connect.IdServiceClient{
		"connect":      idgenv1connect.NewIdServiceClient(hc, url),
		"connect-json": idgenv1connect.NewIdServiceClient(http.DefaultClient, url, connect.WithProtoJSON()),
		"grpc":         idgenv1connect.NewIdServiceClient(hc, url, connect.WithGRPC()),
		"grpc-web":     idgenv1connect.NewIdServiceClient(hc, url, connect.WithGRPCWeb()),
	}
}

func TestConnectProtocols(t *testing.T) {
	cfg := baseConfig(t)
	cfg.Schedule = "v1-v2"
	r := start(t, cfg)
	r.waitReady(t)
	ctx := context.Background()
	tests := []struct {
		name string
		call func(c idgenv1connect.IdServiceClient) error
		code connect.Code // 0: success
	}{
		{"generate", func(c idgenv1connect.IdServiceClient) error {
			resp, err := c.Generate(ctx, connect.NewRequest(&idgenv1.GenerateRequest{}))
			if err == nil && resp.Msg.GetId() <= 0 {
				return fmt.Errorf("id %d", resp.Msg.GetId())
			}
			return err
		}, 0},
		{"batch of 1000", func(c idgenv1connect.IdServiceClient) error {
			resp, err := c.GenerateBatch(ctx, connect.NewRequest(&idgenv1.GenerateBatchRequest{Count: 1000}))
			if err != nil {
				return err
			}
			ids := resp.Msg.GetIds()
			for i := 1; i < len(ids); i++ {
				if ids[i] <= ids[i-1] {
					return fmt.Errorf("not increasing at %d", i)
				}
			}
			if len(ids) != 1000 {
				return fmt.Errorf("%d ids", len(ids))
			}
			return nil
		}, 0},
		{"batch of 0", func(c idgenv1connect.IdServiceClient) error {
			_, err := c.GenerateBatch(ctx, connect.NewRequest(&idgenv1.GenerateBatchRequest{Count: 0}))
			return err
		}, connect.CodeInvalidArgument},
		{"batch of 1001", func(c idgenv1connect.IdServiceClient) error {
			_, err := c.GenerateBatch(ctx, connect.NewRequest(&idgenv1.GenerateBatchRequest{Count: 1001}))
			return err
		}, connect.CodeInvalidArgument},
		{"decode the v1 vector", func(c idgenv1connect.IdServiceClient) error {
			resp, err := c.Decode(ctx, connect.NewRequest(&idgenv1.DecodeRequest{Id: 97301141913751557}))
			if err != nil {
				return err
			}
			m := resp.Msg
			if m.GetLayout() != "v1" || m.GetMachine() != 37 || m.GetSequence() != 5 || m.Region != nil ||
				!m.GetCreatedAt().AsTime().Equal(time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC)) {
				return fmt.Errorf("decoded %v", m)
			}
			return nil
		}, 0},
		{"decode the v2 vector", func(c idgenv1connect.IdServiceClient) error {
			resp, err := c.Decode(ctx, connect.NewRequest(&idgenv1.DecodeRequest{Id: 683244571854022659}))
			if err != nil {
				return err
			}
			if m := resp.Msg; m.GetRegion() != "eu-west-1" || m.GetRegionNumber() != 2 || m.GetMachine() != 170 {
				return fmt.Errorf("decoded %v", m)
			}
			return nil
		}, 0},
		{"decode negative", func(c idgenv1connect.IdServiceClient) error {
			_, err := c.Decode(ctx, connect.NewRequest(&idgenv1.DecodeRequest{Id: -1}))
			return err
		}, connect.CodeInvalidArgument},
	}
	for proto, c := range clients(r.url) {
		for _, tt := range tests {
			t.Run(proto+"/"+tt.name, func(t *testing.T) {
				err := tt.call(c)
				if tt.code == 0 && err != nil {
					t.Fatal(err)
				}
				if tt.code != 0 && connect.CodeOf(err) != tt.code {
					t.Fatalf("err = %v, want code %v", err, tt.code)
				}
			})
		}
	}
}

// grpcurl, a client written elsewhere, finds the service by reflection and calls it.
func TestGrpcurl(t *testing.T) {
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, ".tools", "bin", "grpcurl")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("grpcurl is missing (%v): run make setup", err)
	}
	r := start(t, baseConfig(t))
	r.waitReady(t)
	addr := strings.TrimPrefix(r.url, "http://")
	out, err := exec.Command(bin, "-plaintext", addr, "list").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "idgen.v1.IdService") || !strings.Contains(string(out), "grpc.health.v1.Health") {
		t.Fatalf("grpcurl list: %v\n%s", err, out)
	}
	// Reflection carries the API's documentation, comments included.
	out, err = exec.Command(bin, "-plaintext", addr, "describe", "idgen.v1.IdService").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "//") || !strings.Contains(string(out), "GenerateBatch") {
		t.Fatalf("grpcurl describe shows no documentation: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "-plaintext", addr, "describe", "idgen.v1.DecodeResponse").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "//") {
		t.Fatalf("grpcurl describe of a message shows no documentation: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "-plaintext", "-d", `{"count": 3}`, addr, "idgen.v1.IdService/GenerateBatch").CombinedOutput()
	if err != nil {
		t.Fatalf("grpcurl GenerateBatch: %v\n%s", err, out)
	}
	var resp struct {
		IDs []string `json:"ids"`
	}
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.IDs) != 3 {
		t.Fatalf("grpcurl answer %s: %v", out, err)
	}
	out, err = exec.Command(bin, "-plaintext", "-d", `{"service": "idgen.v1.IdService"}`, addr, "grpc.health.v1.Health/Check").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SERVING") {
		t.Fatalf("grpcurl health: %v\n%s", err, out)
	}
}

func TestHealthStrictClock(t *testing.T) {
	health := clocktest.Synced()
	r := start(t, baseConfig(t), server.WithClockHealth(health))
	r.waitReady(t)
	health.Set(idcore.KernelClock{Synchronized: false}, nil)
	r.srv.Node().Generator().CheckClock()
	code, _, body := testenv.Do(t, "GET", r.url+"/healthz", "", "")
	if code != 503 || !strings.Contains(body, `"reason":"clock_unsynced"`) {
		t.Fatalf("healthz with an unsynchronized clock: %d %s", code, body)
	}
	code, _, body = testenv.Do(t, "POST", r.url+"/v1/ids", "", "{}")
	if code != 503 || !strings.Contains(body, "clock_unsynced") {
		t.Fatalf("POST /v1/ids with an unsynchronized clock: %d %s", code, body)
	}
	_, err := clients(r.url)["connect"].Generate(context.Background(), connect.NewRequest(&idgenv1.GenerateRequest{}))
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("Connect Generate: %v", err)
	}
	health.Set(idcore.KernelClock{Synchronized: true}, nil)
	r.srv.Node().Generator().CheckClock()
	if code, _, body := testenv.Do(t, "GET", r.url+"/healthz", "", ""); code != 200 {
		t.Fatalf("healthz after the clock recovered: %d %s", code, body)
	}
}

func TestHealthNoLease(t *testing.T) {
	cfg := baseConfig(t)
	cfg.Range = "5-5"
	a := start(t, cfg)
	a.waitReady(t)
	// A second generator on the same file and one-number range holds nothing.
	b := start(t, cfg)
	// Wait for b's first claim round to find no free number.
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		ls := b.srv.Node().Leases()
		for _, l := range ls {
			if l.Held || !strings.Contains(l.Problem, lease.ErrNoFreeNumber.Error()) {
				return false, fmt.Sprintf("the second generator's leases: %+v", ls)
			}
		}
		return len(ls) > 0, fmt.Sprintf("the second generator's leases: %+v", ls)
	})
	code, _, body := testenv.Do(t, "GET", b.url+"/healthz", "", "")
	if code != 503 || !strings.Contains(body, `"reason":"no_lease"`) {
		t.Fatalf("healthz without a lease: %d %s", code, body)
	}
	if code, _, body := testenv.Do(t, "POST", b.url+"/v1/ids", "", "{}"); code != 503 || !strings.Contains(body, "no_lease") {
		t.Fatalf("POST /v1/ids without a lease: %d %s", code, body)
	}
	// a shuts down and releases; b takes the number at its next claim round.
	a.stop()
	b.waitReady(t)
	if code, _, _ := testenv.Do(t, "POST", b.url+"/v1/ids", "", "{}"); code != 200 {
		t.Fatalf("after the release: %d", code)
	}
}

func TestGeneratorRefusesBadRegion(t *testing.T) {
	reg := filepath.Join(t.TempDir(), "regions.json")
	if err := os.WriteFile(reg, []byte(`{"regions":[{"number":0,"name":"us-east-1","peer":"us-west-2","status":"retired"},
		{"number":1,"name":"us-west-2","peer":"us-east-1","status":"active"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		region string
		number int
		want   string
	}{{"us-east-1", -1, "retired"}, {"mars-1", -1, "unknown region"}, {"us-west-2", 4, "gives it number 1"}} {
		cfg := baseConfig(t)
		cfg.Registry, cfg.Region, cfg.RegionNum = reg, tt.region, tt.number
		_, err := server.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Fatalf("region %s: err = %v, want %q", tt.region, err, tt.want)
		}
	}
}
