package infra_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/tools/idgenctl/internal/infra"
)

// TestTopologyPreconditions plans the topology module for real with each kind of bad input and
// checks that Terraform refuses it with a message naming the offending region; the defaults plan.
func TestTopologyPreconditions(t *testing.T) {
	bin := terraform(t)
	dir := copyTopology(t, t.TempDir())
	tf, err := tfexec.NewTerraform(dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := tf.Init(ctx, tfexec.Backend(false)); err != nil {
		t.Fatal(err)
	}
	if v, err := tf.Validate(ctx); err != nil || !v.Valid {
		t.Fatalf("validate: %v %+v", err, v)
	}
	five := `"us-east-1"={number=0,peer="us-west-2"},"us-west-2"={number=1,peer="us-east-1"},"eu-west-1"={number=2,peer="us-east-1"},"ap-northeast-1"={number=3,peer="ap-southeast-1"},"ap-southeast-1"={number=4,peer="ap-northeast-1"}`
	for _, tt := range []struct {
		name, regions, retired, want string
		home                         string
	}{
		{"defaults", "", "", "", ""},
		{"a sixth region", `{` + five + `,"sa-east-1"={number=5,peer="us-east-1"}}`, "", "", ""},
		{"number outside 0-7", `{` + five + `,"sa-east-1"={number=8,peer="us-east-1"}}`, "", "region sa-east-1 has number 8: region numbers are 0-7", ""},
		{"negative number", `{` + five + `,"sa-east-1"={number=-1,peer="us-east-1"}}`, "", "region sa-east-1 has number -1", ""},
		{"number used twice", `{` + five + `,"sa-east-1"={number=2,peer="us-east-1"}}`, "", "regions eu-west-1 and sa-east-1 share number 2", ""},
		{"retired number", `{` + five + `,"sa-east-1"={number=6,peer="us-east-1"}}`, "[6]", "region sa-east-1 has number 6, which is retired", ""},
		{"own peer", `{` + five + `,"sa-east-1"={number=5,peer="sa-east-1"}}`, "", "region sa-east-1 is its own peer", ""},
		{"unknown peer", `{` + five + `,"sa-east-1"={number=5,peer="mars-1"}}`, "", "region sa-east-1 has peer mars-1, which is not a region in this map", ""},
		{"home region not a region", "", "", "home_region mars-1 is not a region in regions", "mars-1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			tf.SetStderr(&stderr)
			var opts []tfexec.PlanOption
			if tt.regions != "" {
				opts = append(opts, tfexec.Var("regions="+tt.regions))
			}
			if tt.retired != "" {
				opts = append(opts, tfexec.Var("retired_numbers="+tt.retired))
			}
			if tt.home != "" {
				opts = append(opts, tfexec.Var("home_region="+tt.home))
			}
			_, err := tf.Plan(ctx, append(opts, tfexec.Refresh(false))...)
			msg := strings.Join(strings.Fields(stderr.String()+errString(err)), " ")
			if tt.want == "" {
				if err != nil {
					t.Fatalf("plan refused: %s", msg)
				}
				return
			}
			if err == nil || !strings.Contains(msg, tt.want) {
				t.Fatalf("plan: %v\nwant a refusal saying %q; got %s", err, tt.want, msg)
			}
		})
	}
	// The client config lists each region's own endpoint first, then its peer's.
	planFile := filepath.Join(t.TempDir(), "p")
	if _, err := tf.Plan(ctx, tfexec.Out(planFile)); err != nil {
		t.Fatal(err)
	}
	plan, err := tf.ShowPlanFile(ctx, planFile)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(plan.PlannedValues.Outputs["client_config"].Value)
	var cc map[string]struct{ Endpoints []string }
	if err := json.Unmarshal(b, &cc); err != nil {
		t.Fatal(err)
	}
	want := []string{"https://idgen.eu-west-1.idgen.internal:443", "https://idgen.us-east-1.idgen.internal:443"}
	if len(cc) != 5 || strings.Join(cc["eu-west-1"].Endpoints, " ") != strings.Join(want, " ") {
		t.Fatalf("client_config %v: want eu-west-1's own endpoint, then us-east-1's", cc)
	}
}

// TestTopologyExamplePlans plans the topology's example (a sixth region) offline through the
// runner, guard included, and reads the outputs the roots take as values.
func TestTopologyExamplePlans(t *testing.T) {
	bin := terraform(t)
	infraDir := t.TempDir()
	mod := copyTopology(t, infraDir)
	var out bytes.Buffer
	r := &infra.Runner{Dir: infraDir, Terraform: bin, Stdout: &out, Stderr: &out}
	plan := filepath.Join(t.TempDir(), "example.tfplan")
	if err := r.Plan(context.Background(), filepath.Join(mod, "examples", "basic"), plan, nil, nil); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	b, err := os.ReadFile(plan + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		PlannedValues struct {
			Outputs map[string]struct{ Value json.RawMessage } `json:"outputs"`
		} `json:"planned_values"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	var sources map[string][]string
	if err := json.Unmarshal(p.PlannedValues.Outputs["failover_sources"].Value, &sources); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sources["us-east-1"], " "); got != "eu-west-1 sa-east-1 us-west-2" || len(sources["eu-west-1"]) != 0 {
		t.Fatalf("failover_sources %v: us-east-1 is the peer of eu-west-1, sa-east-1 and us-west-2, eu-west-1 of none", sources)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// copyTopology copies the topology module to dir/modules/topology, so Terraform's working files
// stay out of the repository, and returns its path.
func copyTopology(t *testing.T, dir string) string {
	t.Helper()
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(root, "infra", "terraform", "modules", "topology"), filepath.Join(dir, "modules")).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	return filepath.Join(dir, "modules", "topology")
}
