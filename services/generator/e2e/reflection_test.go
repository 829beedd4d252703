package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/localstack/cmdline"
	"github.com/idgen/idgen/libs/testenv"
)

// TestReflectionServesWhatItLists: the generator binary (not a test binary, which links grpc-go's
// copy of grpc.health.v1 and so hides a gap in the binary's own descriptors), asked by grpcurl,
// lists its services and can describe and be called through every one of them by reflection
// alone: idgen.v1.IdService, gRPC health, and reflection itself, v1 and v1alpha, as grpc-go
// servers list them.
func TestReflectionServesWhatItLists(t *testing.T) {
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, ".tools", "bin", "grpcurl")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("grpcurl is missing (%v): run make setup", err)
	}
	g := startGen(t, testenv.FreePort(t), cmdline.Generator{LeaseStore: "sqlite:" + filepath.Join(t.TempDir(), "leases.db")})
	addr := strings.TrimPrefix(g.url, "http://")
	run := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"-plaintext", "-max-time", "10"}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := run(addr, "list")
	if err != nil {
		t.Fatalf("grpcurl list: %v\n%s", err, out)
	}
	listed := strings.Fields(out)
	want := []string{"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection", "idgen.v1.IdService"}
	slices.Sort(listed)
	if !slices.Equal(listed, want) {
		t.Errorf("listed %q, want %q", listed, want)
	}
	calls := map[string]struct{ method, body, want string }{
		"idgen.v1.IdService":                       {"GenerateBatch", `{"count": 2}`, `"ids": [`},
		"grpc.health.v1.Health":                    {"Check", `{"service": "idgen.v1.IdService"}`, `"status": "`}, // SERVING a moment after /healthz
		"grpc.reflection.v1.ServerReflection":      {"ServerReflectionInfo", `{"file_containing_symbol": "idgen.v1.IdService"}`, `"fileDescriptorProto"`},
		"grpc.reflection.v1alpha.ServerReflection": {"ServerReflectionInfo", `{"list_services": ""}`, `"name": "grpc.reflection.v1.ServerReflection"`},
	}
	for _, svc := range listed {
		t.Run(svc, func(t *testing.T) {
			out, err := run(addr, "describe", svc)
			if err != nil || !strings.Contains(out, svc+" is a service") {
				t.Errorf("grpcurl describe %s: %v\n%s", svc, err, out)
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
