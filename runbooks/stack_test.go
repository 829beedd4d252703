package runbooks

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/testenv"
)

// Lease settings of the stack's generators, short so that a runbook that fences or quarantines
// sees the generators come back within seconds. Their first claims write them into the tables as
// the tables' rules, which idgenctl's lift and fence-restore read.
const (
	stackLease  = "9s"
	stackRenew  = "1s"
	stackMargin = "1s"
)

// stack is the local stack the runbooks run against.
type stack struct {
	bin        string // idgenctl and the aws wrapper: first on the blocks' PATH
	env        []string
	generators map[string]string
}

// startStack builds the binaries and starts the registry, one dynalite per region (lease tables
// are region-local), the generators of us-east-1 (service range) and eu-west-1 (machine number
// 170, the number of the design's playbook), Redis and the public-ID service.
func startStack(t *testing.T) *stack {
	t.Helper()
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin, svc := filepath.Join(dir, "bin"), filepath.Join(dir, "svc")
	for _, d := range []string{bin, svc} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-o", svc+"/", "./tools/idgenctl", "./services/registry/cmd/registry",
		"./services/generator/cmd/generator", "./services/public-id/cmd/public-id")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.Rename(filepath.Join(svc, "idgenctl"), filepath.Join(bin, "idgenctl")); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	endpoints := map[string]string{}
	for _, region := range []string{"us-east-1", "eu-west-1"} {
		d := testenv.StartDynalite(t, "")
		db, err := dynamolease.NewClient(ctx, d.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		if err := dynamolease.CreateTables(ctx, db, lease.TableV2, lease.TableHistory); err != nil {
			t.Fatal(err)
		}
		endpoints[region] = d.Endpoint
	}
	writeAWSWrapper(t, filepath.Join(bin, "aws"), endpoints)

	logs := filepath.Join(dir, "logs")
	_ = os.MkdirAll(logs, 0o755)
	regPort := testenv.FreePort(t)
	reg := fmt.Sprintf("http://127.0.0.1:%d", regPort)
	startProc(t, logs, filepath.Join(svc, "registry"), reg+"/healthz", "--insecure-dev", "--listen", fmt.Sprintf("127.0.0.1:%d", regPort),
		"--store", "sqlite:"+filepath.Join(dir, "registry.db"))
	s := &stack{bin: bin, generators: map[string]string{}}
	ranges := map[string]string{"us-east-1": "service", "eu-west-1": "170-170"}
	var stores, gens []string // gens: us-east-1's first
	for _, region := range []string{"us-east-1", "eu-west-1"} {
		port := testenv.FreePort(t)
		url := fmt.Sprintf("http://127.0.0.1:%d", port)
		startProc(t, logs, filepath.Join(svc, "generator"), url+"/healthz", "--insecure-dev", "--clock-check", "warn",
			"--registry", reg, "--region", region, "--listen", fmt.Sprintf("127.0.0.1:%d", port),
			"--lease-store", "dynamodb:"+endpoints[region], "--range", ranges[region],
			"--lease", stackLease, "--renew", stackRenew, "--fence-margin", stackMargin)
		s.generators[region] = url
		stores = append(stores, region+"=dynamodb:"+endpoints[region])
		gens = append(gens, url)
	}
	redis := testenv.StartRedis(t, t.TempDir())
	pubPort := testenv.FreePort(t)
	pub := fmt.Sprintf("http://127.0.0.1:%d", pubPort)
	startProc(t, logs, filepath.Join(svc, "public-id"), pub+"/healthz", "--insecure-dev", "--listen", fmt.Sprintf("127.0.0.1:%d", pubPort),
		"--store", "redis:"+redis.Addr)

	home := filepath.Join(dir, "home")
	_ = os.MkdirAll(home, 0o755)
	s.env = append(os.Environ(),
		"PATH="+bin+":"+os.Getenv("PATH"),
		"HOME="+home,
		"IDGEN_REGISTRY="+reg,
		"IDGEN_LEASE_STORE="+strings.Join(stores, ","),
		"IDGEN_GENERATORS="+strings.Join(gens, ","),
		"IDGEN_PUBLIC_ID="+pub,
		"IDGEN_REDIS_URL=redis://"+redis.Addr,
	)
	return s
}

// writeAWSWrapper writes the aws that the runbooks' blocks call: the real AWS CLI (Debian's
// awscli, from make setup), pointed at the dynalite of the region the command names, with
// placeholder credentials. Only DynamoDB commands run; anything else needs AWS itself.
func writeAWSWrapper(t *testing.T, path string, endpoints map[string]string) {
	t.Helper()
	real := "/usr/bin/aws"
	if _, err := os.Stat(real); err != nil {
		if real, err = exec.LookPath("aws"); err != nil {
			t.Fatalf("the AWS CLI is missing: run `make setup` (apt-get install awscli)")
		}
	}
	var cases strings.Builder
	for region, ep := range endpoints {
		fmt.Fprintf(&cases, "  %s) endpoint=%s ;;\n", region, ep)
	}
	script := fmt.Sprintf(`#!/usr/bin/env bash
# The runbook harness's aws: the real AWS CLI against the local stack's dynalite of the region named.
set -euo pipefail
if [ "${1:-}" != dynamodb ]; then
  echo "aws (runbook harness): only dynamodb commands run locally; $1 needs AWS itself" >&2
  exit 2
fi
region=""
prev=""
for a in "$@"; do
  if [ "$prev" = --region ]; then region=$a; fi
  prev=$a
done
case "$region" in
%s  *) echo "aws (runbook harness): no local lease store for region '$region'" >&2; exit 2 ;;
esac
export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_PAGER="" AWS_DEFAULT_OUTPUT=json
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true
exec %s --endpoint-url "$endpoint" "$@"
`, cases.String(), real)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func startProc(t *testing.T, logs, bin, healthURL string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	logf, err := os.CreateTemp(logs, filepath.Base(bin)+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	if err := waitHealthy(healthURL, 20*time.Second); err != nil {
		b, _ := os.ReadFile(logf.Name())
		t.Fatalf("%s: %v\n%s", filepath.Base(bin), err, b)
	}
}

func waitHealthy(url string, d time.Duration) error {
	deadline := time.Now().Add(d)
	c := &http.Client{Timeout: time.Second}
	for {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy after %v: %v", url, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
