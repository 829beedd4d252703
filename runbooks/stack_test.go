package runbooks

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/localstack"
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

// startStack starts the local stack (package localstack) with one dynalite per region (lease
// tables are region-local) as the generators' lease stores, the generator of us-east-1 on the
// service range and eu-west-1's on machine number 170 (the number of the design's playbook), and
// the public-ID service on Redis.
func startStack(t *testing.T) *stack {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	endpoints := map[string]string{}
	var gens []localstack.Generator
	for _, g := range []struct{ region, machines string }{{"us-east-1", "service"}, {"eu-west-1", "170-170"}} {
		d := testenv.StartDynaliteWithTables(t, "", dynamolease.Tables(lease.TableV2, lease.TableHistory))
		endpoints[g.region] = d.Endpoint
		gens = append(gens, localstack.Generator{Region: g.region, LeaseStore: "dynamodb:" + d.Endpoint,
			Args: []string{"--range", g.machines, "--lease", stackLease, "--renew", stackRenew, "--fence-margin", stackMargin,
				"--registry-cache", filepath.Join(dir, "regions-"+g.region+".json")}}) // not the repository's .idgen/
	}
	writeAWSWrapper(t, filepath.Join(bin, "aws"), endpoints)
	redis := testenv.StartRedis(t, t.TempDir())
	ls := localstack.StartT(t, localstack.Options{State: filepath.Join(dir, "state"), Generators: gens, PublicIDStore: "redis:" + redis.Addr},
		localstack.StartOptions{})

	s := &stack{bin: bin, generators: map[string]string{}}
	var stores, urls []string // us-east-1's first
	for _, g := range ls.Generators() {
		s.generators[g.Region] = g.URL()
		stores = append(stores, g.Region+"=dynamodb:"+endpoints[g.Region])
		urls = append(urls, g.URL())
	}
	if err := os.Symlink(ls.Bin("idgenctl"), filepath.Join(bin, "idgenctl")); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	s.env = append(os.Environ(),
		"PATH="+bin+":"+os.Getenv("PATH"),
		"HOME="+home,
		"IDGEN_REGISTRY="+ls.Service("registry").URL(),
		"IDGEN_LEASE_STORE="+strings.Join(stores, ","),
		"IDGEN_GENERATORS="+strings.Join(urls, ","),
		"IDGEN_PUBLIC_ID="+ls.Service("public-id").URL(),
		"IDGEN_GATEWAY_OPS=http://"+ls.Service("public-id-gateway").HealthAddr,
		"IDGEN_REDIS_URL=redis://"+redis.Addr,
	)
	return s
}

// waitRegionHealthy runs idgenctl health for the region until it passes: the generators answer
// ok and the lease table agrees with the leases they report (a quarantine, lift or fence reaches
// a generator only at its next renewal, so its own /healthz alone can still say ok). The test
// fails, naming what left the region unhealthy, if it does not pass within d.
func (s *stack) waitRegionHealthy(t *testing.T, what, region string, d time.Duration) {
	t.Helper()
	testenv.Eventually(t, d, func() (bool, string) {
		cmd := exec.Command(filepath.Join(s.bin, "idgenctl"), "health", "--region", region)
		cmd.Env = s.env
		out, err := cmd.CombinedOutput()
		if err != nil {
			time.Sleep(150 * time.Millisecond) // the cadence of a check that reads every lease table, not a wait for health
		}
		return err == nil, fmt.Sprintf("%s left the %s generator unhealthy: %v\n%s", what, region, err, out)
	})
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
