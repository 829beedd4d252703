package infra_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/tools/idgenctl/internal/infra"
)

func TestCheckPlanFixtures(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []string // one refusal line each, in order; none for a safe plan
	}{
		{"safe.json", nil},
		{"region-retired.json", nil},
		{"region-retired-in-topology.json", nil},
		{"delete-lease-table.json", []string{"module.region_eu_west_1.aws_dynamodb_table.leases: deletes the lease table idgen-leases-v2"}},
		{"replace-history-table.json", []string{"module.region_eu_west_1.aws_dynamodb_table.history: replaces (deletes and re-creates) the lease history table idgen-lease-history"}},
		{"pitr-off.json", []string{"module.registry.aws_dynamodb_table.this: point-in-time recovery off on the registry table idgen-regions"}},
		{"deletion-protection-off.json", []string{"module.region_eu_west_1.aws_dynamodb_table.leases: deletion protection off on the lease table idgen-leases-v2"}},
		{"global-lease-table.json", []string{"module.region_eu_west_1.aws_dynamodb_table.leases: replicas make the lease table idgen-leases-v2 a global table"}},
		{"number-changed.json", []string{"output.regions: region eu-west-1 changes number 2 → 5"}},
		{"number-reused.json", []string{
			"output.regions: region eu-west-1 (number 2) leaves the topology without its number in retired_numbers",
			"output.regions: region sa-east-1 is given number 2, which was region eu-west-1's",
		}},
		{"retired-given.json", []string{"output.regions: region sa-east-1 is given number 6, which is retired"}},
		// The roots: the registry root, a region root, the bootstrap root.
		{"registry-root-first-apply.json", nil},
		{"registry-root-v1-table-dropped.json", []string{"aws_dynamodb_table.v1[0]: deletes the lease table idgen-leases"}},
		{"region-root-safe.json", nil},
		{"region-root-number-changed.json", []string{"output.regions: region eu-west-1 changes number 2 → 5"}},
		{"region-root-region-retired.json", nil},
		// The public-ID table and Redis of a region root.
		{"region-root-public-id-first-apply.json", nil},
		{"public-id-table-replaced-global.json", []string{
			"module.public_id.aws_dynamodb_table.public_ids: replaces (deletes and re-creates) the public-ID table idgen-public-ids",
			"module.public_id.aws_dynamodb_table.public_ids: replicas make the public-ID table idgen-public-ids a global table",
		}},
		{"public-id-table-protection-off.json", []string{
			"module.public_id.aws_dynamodb_table.public_ids: point-in-time recovery off on the public-ID table idgen-public-ids",
			"module.public_id.aws_dynamodb_table.public_ids: deletion protection off on the public-ID table idgen-public-ids",
		}},
		{"public-id-cache-replaced.json", []string{"module.public_id.aws_elasticache_replication_group.cache: replaces (deletes and re-creates) the public-ID Redis idgen-public-id-eu-west-1"}},
		{"public-id-cache-deleted.json", []string{"module.public_id.aws_elasticache_replication_group.cache: deletes the public-ID Redis idgen-public-id-eu-west-1"}},
		{"public-id-cache-weakened.json", []string{
			"module.public_id.aws_elasticache_replication_group.cache: encryption in transit off on the public-ID Redis idgen-public-id-eu-west-1",
			"module.public_id.aws_elasticache_replication_group.cache: Multi-AZ off on the public-ID Redis idgen-public-id-eu-west-1",
			"module.public_id.aws_elasticache_replication_group.cache: automatic failover off on the public-ID Redis idgen-public-id-eu-west-1",
		}},
		{"bootstrap-first-apply.json", nil},
		{"bootstrap-state-lost.json", []string{
			"aws_dynamodb_table.lock: replaces (deletes and re-creates) the state lock table idgen-terraform-locks",
			"aws_kms_key.state: deletes the KMS key of the Terraform states",
			"aws_s3_bucket.state: deletes the Terraform state bucket idgen-tfstate-111122223333-us-east-1",
			`aws_s3_bucket_versioning.state: versioning "Suspended" on the Terraform state bucket idgen-tfstate-111122223333-us-east-1`,
		}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			var out bytes.Buffer
			err := infra.CheckPlanFile(filepath.Join("testdata", tt.file), &out)
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if tt.want == nil {
				if err != nil || len(lines) != 1 || !strings.HasPrefix(lines[0], "plan guard: ") || !strings.Contains(lines[0], "nothing refused") {
					t.Fatalf("a safe plan: %v\n%s", err, out.String())
				}
				return
			}
			if !errors.Is(err, infra.ErrRefused) || len(lines) != len(tt.want) {
				t.Fatalf("err %v, output:\n%s\nwant %d refusals", err, out.String(), len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], "refused: "+w) {
					t.Errorf("line %d: %q, want it to start with %q", i, lines[i], "refused: "+w)
				}
			}
		})
	}
}

// terraform returns the pinned Terraform that make setup installs; without it the test fails,
// as a missing server does.
func terraform(t *testing.T) string {
	t.Helper()
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, ".tools", "bin", "terraform")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no %s: run make setup", bin)
	}
	t.Setenv("TF_CLI_CONFIG_FILE", os.DevNull)
	t.Setenv("TF_IN_AUTOMATION", "1")
	t.Setenv("CHECKPOINT_DISABLE", "1")
	return bin
}

// TestTopologyPlanGuard: the topology module planned and applied for real (it has no provider, so
// it runs offline with local state), then planned again with a region's number changed: the
// guard refuses that plan and apply does not run it.
func TestTopologyPlanGuard(t *testing.T) {
	bin := terraform(t)
	infraDir := t.TempDir()
	mod := copyTopology(t, infraDir)
	var out bytes.Buffer
	r := &infra.Runner{Dir: infraDir, Terraform: bin, Stdout: &out, Stderr: &out}
	ctx := context.Background()
	plan := filepath.Join(t.TempDir(), "first.tfplan")
	if err := r.Plan(ctx, mod, plan, nil, nil); err != nil {
		t.Fatalf("first plan: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "nothing refused") {
		t.Fatalf("first plan:\n%s", out.String())
	}
	if err := r.Apply(ctx, mod, plan, false); err != nil {
		t.Fatalf("apply: %v\n%s", err, out.String())
	}
	// eu-west-1 takes number 5: a region's number never changes.
	tfvars := `regions = {
  "us-east-1"      = { number = 0, peer = "us-west-2" }
  "us-west-2"      = { number = 1, peer = "us-east-1" }
  "eu-west-1"      = { number = 5, peer = "us-east-1" }
  "ap-northeast-1" = { number = 3, peer = "ap-southeast-1" }
  "ap-southeast-1" = { number = 4, peer = "ap-northeast-1" }
}
`
	if err := os.WriteFile(filepath.Join(mod, "terraform.tfvars"), []byte(tfvars), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	second := filepath.Join(t.TempDir(), "second.tfplan")
	err := r.Plan(ctx, mod, second, nil, nil)
	if !errors.Is(err, infra.ErrRefused) || !strings.Contains(out.String(), "refused: output.regions: region eu-west-1 changes number 2 → 5") {
		t.Fatalf("second plan: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(second + ".json"); err != nil {
		t.Fatalf("the plan's JSON was not saved: %v", err)
	}
	out.Reset()
	if err := r.Apply(ctx, mod, second, false); !errors.Is(err, infra.ErrRefused) || !strings.Contains(err.Error(), infra.OverrideFlag) {
		t.Fatalf("apply of a refused plan: %v\n%s", err, out.String())
	}
	// The check-plan command reads the saved JSON the same way.
	out.Reset()
	if err := infra.CheckPlanFile(second+".json", &out); !errors.Is(err, infra.ErrRefused) {
		t.Fatalf("check-plan: %v\n%s", err, out.String())
	}
}
