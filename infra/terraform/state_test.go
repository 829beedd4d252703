package terraform

import (
	"regexp"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestStatePerRegion: the bootstrap root makes the state bucket and lock table of the region it
// is given (no default: it is applied once per region), named for that region, and its
// backend_config output names that region; the example settings file is one region's, its
// bucket and key of that region too.
func TestStatePerRegion(t *testing.T) {
	m, err := loadModule(bootstrapDir)
	if err != nil {
		t.Fatal(err)
	}
	if v := m.Variables["region"]; v == nil || v.Default != nil || !v.Required {
		t.Fatalf("bootstrap: variable region must be required (the root is applied once per region): %+v", v)
	}
	for _, region := range []string{"us-east-1", "eu-west-1", "ap-southeast-1"} {
		in, err := evalModule(bootstrapDir, bootstrapDir, map[string]cty.Value{"region": cty.StringVal(region)}, awsSchema(t))
		if err != nil {
			t.Fatal(err)
		}
		wantProblems(t, in.problems)
		if b := in.locals["bucket"]; !b.IsKnown() || !strings.HasSuffix(b.AsString(), "-"+region) {
			t.Errorf("bootstrap in %s: bucket %#v, want one named for %s", region, b, region)
		}
		out := in.outputs["backend_config"]
		if !out.IsKnown() || !regexp.MustCompile(`(?m)^region\s*=\s*"`+region+`"$`).MatchString(out.AsString()) {
			t.Errorf("bootstrap in %s: backend_config does not name %s:\n%#v", region, region, out)
		}
	}
	in, err := evalModule(bootstrapDir, bootstrapDir, map[string]cty.Value{"region": cty.StringVal("Europe")}, awsSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	wantProblems(t, in.problems, "must be an AWS region name")

	example, err := readTfvars("backend.hcl.example")
	if err != nil {
		t.Fatal(err)
	}
	region := example["region"].AsString()
	if region == "us-east-1" {
		t.Errorf("backend.hcl.example is us-east-1's: show a region of its own, whose roots keep their state there")
	}
	if b := example["bucket"].AsString(); !strings.HasSuffix(b, "-"+region) {
		t.Errorf("backend.hcl.example: bucket %s is not %s's", b, region)
	}
	if k := example["kms_key_id"].AsString(); !strings.HasPrefix(k, "arn:aws:kms:"+region+":") {
		t.Errorf("backend.hcl.example: key %s is not in %s", k, region)
	}
	if _, ok := example["key"]; ok {
		t.Error("backend.hcl.example names a key: idgenctl infra gives each root its own")
	}
}
