package serve_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/testenv"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

func grpcurl(t *testing.T) string {
	t.Helper()
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, ".tools", "bin", "grpcurl")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("grpcurl is missing (%v): run make setup", err)
	}
	return bin
}

// TestReflectionServesWhatItLists: grpcurl, a client written elsewhere that knows no schema,
// lists the services, describes each and calls each by reflection alone: the service, gRPC
// health and reflection itself (v1 and v1alpha, as grpc-go servers list them). Tools that load
// every listed service at start-up (grpcui, Postman) refuse a server that lists one it cannot
// describe.
func TestReflectionServesWhatItLists(t *testing.T) {
	bin, addr := grpcurl(t), serveAPI(t, serve.Browsers{})
	run := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"-plaintext", "-max-time", "10"}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := run(addr, "list")
	if err != nil {
		t.Fatalf("grpcurl list: %v\n%s", err, out)
	}
	listed := strings.Fields(out)
	want := []string{"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection", testService}
	slices.Sort(listed)
	if !slices.Equal(listed, want) {
		t.Errorf("listed %q, want %q", listed, want)
	}
	// One call of each listed service, made from the descriptors reflection serves.
	calls := map[string]struct{ method, body, want string }{
		testService:                                {"Generate", `{}`, `"id": "42"`},
		"grpc.health.v1.Health":                    {"Check", `{"service": ""}`, `"status": "SERVING"`},
		"grpc.reflection.v1.ServerReflection":      {"ServerReflectionInfo", `{"list_services": ""}`, `"name": "` + testService + `"`},
		"grpc.reflection.v1alpha.ServerReflection": {"ServerReflectionInfo", `{"list_services": ""}`, `"name": "grpc.health.v1.Health"`},
	}
	for _, svc := range listed {
		t.Run(svc, func(t *testing.T) {
			out, err := run(addr, "describe", svc)
			if err != nil || !strings.Contains(out, svc+" is a service") || !strings.Contains(out, "//") {
				t.Errorf("grpcurl describe %s (want it with its comments): %v\n%s", svc, err, out)
			}
			c, ok := calls[svc]
			if !ok {
				t.Fatalf("%s is listed but this test makes no call of it", svc)
			}
			out, err = run("-d", c.body, addr, svc+"/"+c.method)
			if err != nil || !strings.Contains(out, c.want) {
				t.Errorf("grpcurl %s/%s by reflection: %v\n%s, want %s", svc, c.method, err, out, c.want)
			}
		})
	}
}

// h2c is an HTTP client that speaks HTTP/2 without TLS, as reflection needs (bidi streams).
func h2c() *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr}
}

// TestReflectionServesGRPCsFilesAsGrpcreflectDoes: the grpc.health.v1 and grpc.reflection files
// the services' reflector serves are the very ones connectrpc.com/grpcreflect's own default
// reflector serves (serve keeps a copy, since a reflector with the project's resolver no longer
// reaches grpcreflect's): a grpcreflect upgrade that changes them fails here.
func TestReflectionServesGRPCsFilesAsGrpcreflectDoes(t *testing.T) {
	services := []string{grpchealth.HealthV1ServiceName, grpcreflect.ReflectV1ServiceName, grpcreflect.ReflectV1AlphaServiceName}
	theirs := http.NewServeMux()
	theirs.Handle(grpcreflect.NewHandlerV1(grpcreflect.NewStaticReflector(services...)))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Serve(ctx, l, theirs, nil, serve.Shutdown{Drain: time.Second}, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() { cancel(); <-done })
	ours := serveAPI(t, serve.Browsers{})
	files := func(addr, symbol string) [][]byte {
		t.Helper()
		s := grpcreflect.NewClient(h2c(), "http://"+addr, connect.WithGRPC()).NewStream(context.Background())
		defer s.Close()
		fds, err := s.FileContainingSymbol(protoreflect.FullName(symbol))
		if err != nil {
			t.Fatalf("%s from %s: %v", symbol, addr, err)
		}
		var out [][]byte
		for _, fd := range fds {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(fd)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
		return out
	}
	for _, svc := range services {
		got, want := files(ours, svc), files(l.Addr().String(), svc)
		if len(want) == 0 || !slices.EqualFunc(got, want, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Errorf("%s: the services serve %d files that differ from grpcreflect's %d", svc, len(got), len(want))
		}
	}
}
