package providerschema

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
)

// testdata/pkg is a package laid out as @cdktf/provider-aws is: a .jsii manifest with one of
// each thing the extraction meets there: arguments of each type, a property cdktf renamed
// (fetchSecret, the provider's get_secret), blocks in blocks, a once-only block (a single
// struct), a required block, a block cdktf does not describe (type any), an attribute of a list
// of objects, computed-only attributes (a string, one with a digit, a list of objects) at the
// top and in a block, a data source without arguments, the provider, and an enum.
const fixture = "testdata/pkg"

func TestExtract(t *testing.T) {
	s, err := Extract(fixture)
	if err != nil {
		t.Fatal(err)
	}
	computed := func(ty cty.Type) *Attribute { return &Attribute{Type: ty, Computed: true, Derived: true} }
	want := &Schema{
		Format: format, Package: Package, PackageVersion: "0.0.1-test",
		Provider: "registry.terraform.io/hashicorp/aws", ProviderVersion: "9.9.9",
		ProviderConfig: &Block{
			Attrs:  map[string]*Attribute{"region": {Type: cty.String}},
			Blocks: map[string]*Nested{"default_tags": {Block: Block{Attrs: map[string]*Attribute{"tags": {Type: cty.Map(cty.String)}}}}},
		},
		Resources: map[string]*Block{
			"aws_widget": {
				Attrs: map[string]*Attribute{
					"name":       {Type: cty.String, Required: true},
					"size":       {Type: cty.Number},
					"get_secret": {Type: cty.Bool},
					"tags":       {Type: cty.Map(cty.String)},
					"ingress": {Type: cty.DynamicPseudoType, Object: &Block{
						Attrs: map[string]*Attribute{"from_port": {Type: cty.Number}},
					}},
					"arn":           computed(cty.String),
					"address_line1": computed(cty.String),
					"status": {Type: cty.DynamicPseudoType, Computed: true, Derived: true, Object: &Block{
						Attrs: map[string]*Attribute{"code": computed(cty.String)},
					}},
				},
				Blocks: map[string]*Nested{
					"rule": {Block: Block{
						Attrs:  map[string]*Attribute{"port": {Type: cty.Number, Required: true}, "rule_id": computed(cty.String)},
						Blocks: map[string]*Nested{"target": {Block: Block{Attrs: map[string]*Attribute{"cidr": {Type: cty.String, Required: true}}}}},
					}},
					"settings":  {MaxOne: true, Block: Block{Attrs: map[string]*Attribute{"mode": {Type: cty.String}}}},
					"statement": {Block: Block{Opaque: true}},
				},
			},
			"aws_big_thing": {
				Blocks: map[string]*Nested{"setting": {Required: true, Block: Block{Attrs: map[string]*Attribute{"value": {Type: cty.String}}}}},
			},
		},
		DataSources: map[string]*Block{"aws_widget": {Attrs: map[string]*Attribute{"owner": computed(cty.String)}}},
	}
	if !reflect.DeepEqual(s, want) {
		got, _ := json.MarshalIndent(s, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("got\n%s\nwant\n%s", got, w)
	}
}

// TestExtractBadManifest: a manifest the extraction cannot read is an error naming the file,
// not an empty schema.
func TestExtractBadManifest(t *testing.T) {
	for name, src := range map[string]string{
		"not JSON":          "{\"types\": {",
		"no types":          `{"name": "@cdktf/provider-aws"}`,
		"no resource class": `{"types": {}}`,
		"a property without its Terraform name": `{"types": {
  "@cdktf/provider-aws.x.X": {"kind": "class", "base": "cdktf.TerraformResource",
    "docs": {"summary": "Represents a {@link https://registry.terraform.io/providers/hashicorp/aws/9.9.9/docs/resources/x aws_x}."},
    "initializer": {"parameters": [{"name": "config", "type": {"fqn": "@cdktf/provider-aws.x.XConfig"}}]}},
  "@cdktf/provider-aws.x.XConfig": {"kind": "interface", "datatype": true, "properties": [{"name": "fooBar", "type": {"primitive": "string"}}]}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			pj, err := os.ReadFile(filepath.Join(fixture, "package.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "package.json"), pj, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ".jsii"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Extract(dir)
			if err == nil || !strings.Contains(err.Error(), dir) {
				t.Fatalf("got %v, %v; want an error naming %s", s, err, dir)
			}
			t.Log(err)
		})
	}
}

// installFixture makes a repository root with the fixture installed as the package.
func installFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dst := filepath.Join(root, PackageDir)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", fixture, dst).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	return root
}

// TestLoadCaches: the first Load extracts and caches, a second reads the cache (and not the
// package), and a cache of another package version is not read.
func TestLoadCaches(t *testing.T) {
	root := installFixture(t)
	s, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(root, CacheDir, "aws-0.0.1-test.format2.json")
	st, err := os.Stat(cache)
	if err != nil {
		t.Fatalf("no cache: %v", err)
	}
	if st.Mode().Perm()&0o044 != 0o044 {
		t.Errorf("cache mode %v: others cannot read it", st.Mode())
	}
	// The manifest is no longer read: the cache answers.
	if err := os.Remove(filepath.Join(root, PackageDir, ".jsii")); err != nil {
		t.Fatal(err)
	}
	again, err := Load(root)
	if err != nil || !reflect.DeepEqual(again, s) {
		t.Fatalf("from the cache: %v %+v", err, again)
	}
	// Another version installed: its own cache, extracted from the package (which now fails).
	pj := filepath.Join(root, PackageDir, "package.json")
	src, _ := os.ReadFile(pj)
	if err := os.WriteFile(pj, []byte(strings.Replace(string(src), "0.0.1-test", "0.0.2-test", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(root); err == nil {
		t.Fatal("a new version was read from the old version's cache")
	}
}

func TestLoadNotInstalled(t *testing.T) {
	_, err := Load(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "make setup") {
		t.Fatalf("got %v, want an error saying make setup installs it", err)
	}
}

func parseModule(t *testing.T, src string) []*hcl.File {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCL([]byte(src), "main.tf")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return []*hcl.File{f}
}

func TestCheckModule(t *testing.T) {
	s, err := Extract(fixture)
	if err != nil {
		t.Fatal(err)
	}
	const good = `provider "aws" {
  alias  = "east"
  region = "us-east-1"
  default_tags {
    tags = { a = "b" }
  }
}
data "aws_widget" "w" {}
resource "aws_widget" "a" {
  count      = 2
  provider   = aws.east
  depends_on = [data.aws_widget.w]
  name       = "a-${data.aws_widget.w.owner}"
  size       = "5"
  get_secret = "true"
  tags       = { n = 1, s = "x", v = var.v }
  rule {
    port = 1
    target {
      cidr = "10.0.0.0/8"
    }
  }
  dynamic "rule" {
    for_each = [1, 2]
    content {
      port = rule.value
      dynamic "target" {
        for_each = ["10.1.0.0/16"]
        content {
          cidr = target.value
        }
      }
    }
  }
  settings {
    mode = "fast"
  }
  ingress {
    from_port = 443
  }
  statement {
    anything = "goes"
  }
  lifecycle {
    prevent_destroy = true
    ignore_changes  = [tags["n"], rule]
  }
}
resource "aws_widget" "b" {
  for_each = toset(["x"])
  name     = each.key
  size     = var.size != null ? var.size : 3
  ingress  = [{ from_port = 1 }]
}
resource "aws_big_thing" "b" {
  setting {}
}
resource "terraform_data" "other" {
  input = [aws_widget.a[0].arn, aws_widget.a[*].name, one(aws_widget.a[*].tags), aws_big_thing.b.setting, aws_widget.a,
    aws_widget.a[0].rule[0].target[0].cidr, aws_widget.a[0].rule[*].rule_id, aws_widget.a[count.index].status[0].code,
    aws_widget.b["x"].settings[0].mode, aws_widget.a[0].tags["n"], aws_widget.a[0].address_line_1, aws_widget.a[0].statement[0].x]
}
output "o" {
  value = aws_widget.a[1].size
}
`
	for _, tt := range []struct {
		name, old, new string
		want           []string
	}{
		{"good", "", "", nil},
		{"argument misspelt", `  name       = "a-`, `  nmae       = "a-`, []string{
			"main.tf:13: aws_widget.a: no argument nmae in aws_widget (did you mean name?)",
			"main.tf:9: aws_widget.a: missing required argument name",
		}},
		{"block as an argument", "  depends_on = [data.aws_widget.w]\n", "  rule = []\n", []string{"aws_widget.a: rule is a block, not an argument"}},
		{"object as a block", "  depends_on = [data.aws_widget.w]\n", "  settings = { mode = \"x\" }\n", []string{"main.tf:12: aws_widget.a: settings is a block, not an argument: write settings { … }"}},
		{"argument as a block", "  lifecycle {", "  size {\n  }\n  lifecycle {", []string{"aws_widget.a: size is an argument, not a block"}},
		{"nested block misspelt", "    target {\n      cidr = \"10.0.0.0/8\"", "    targte {\n      cidr = \"10.0.0.0/8\"", []string{
			"aws_widget.a.rule: no block targte in aws_widget's rule block (did you mean target?)",
		}},
		{"in a dynamic block's content", "          cidr = target.value", "          cdir = target.value", []string{
			"aws_widget.a.rule.target: no argument cdir in aws_widget's rule.target block (did you mean cidr?)",
			"aws_widget.a.rule.target: missing required argument cidr",
		}},
		{"in an object attribute's block", "    from_port = 443", "    form_port = 443", []string{
			"main.tf:39: aws_widget.a.ingress: no argument form_port in aws_widget's ingress block (did you mean from_port?)",
		}},
		{"dynamic block of no such block", `dynamic "rule" {`, `dynamic "rules" {`, []string{"aws_widget.a: no block rules in aws_widget (did you mean rule?)"}},
		{"missing required block", "  setting {}\n", "", []string{"aws_big_thing.b: missing required block setting"}},
		{"once-only block twice", "  ingress {\n", "  settings {\n  }\n  ingress {\n", []string{
			"main.tf:38: aws_widget.a: block settings may appear only once in aws_widget; it appears again here (first at line 35)",
		}},
		{"once-only block once and dynamic", "  ingress {\n", "  dynamic \"settings\" {\n    for_each = []\n    content {}\n  }\n  ingress {\n", nil},
		{"computed-only attribute set", `  size       = "5"`, `  arn        = "5"`, []string{
			"main.tf:14: aws_widget.a: arn is a computed-only attribute of aws_widget: the provider sets it, it cannot be set",
		}},
		{"computed-only attribute in a block", "    port = 1\n", "    port = 1\n    rule_id = \"x\"\n", []string{
			"main.tf:19: aws_widget.a.rule: rule_id is a computed-only attribute of aws_widget's rule block",
		}},
		{"computed-only attribute of a derived name", `  size       = "5"`, `  address_line_1 = "5"`, []string{
			"aws_widget.a: address_line_1 is a computed-only attribute of aws_widget",
		}},
		{"string to number", `  size       = "5"`, `  size       = "five"`, []string{
			`main.tf:14: aws_widget.a: size = "five": Terraform cannot convert a string to number (a number is required)`,
		}},
		{"number to bool", `  get_secret = "true"`, `  get_secret = 1`, []string{
			`main.tf:15: aws_widget.a: get_secret = 1: Terraform cannot convert a number to bool`,
		}},
		{"list to string", `  name       = "a-${data.aws_widget.w.owner}"`, `  name       = ["a-${data.aws_widget.w.owner}"]`, []string{
			`main.tf:13: aws_widget.a: name = ["a-${data.aws_widget.w.owner}"]: Terraform cannot convert a list to string`,
		}},
		{"list to map", `  tags       = { n = 1, s = "x", v = var.v }`, `  tags       = [var.v]`, []string{
			`aws_widget.a: tags = [var.v]: Terraform cannot convert a list to map of string`,
		}},
		{"in a nested block", "    port = 1\n", "    port = \"one\"\n", []string{
			`main.tf:18: aws_widget.a.rule: port = "one": Terraform cannot convert a string to number`,
		}},
		{"unknown types", `data "aws_widget" "w" {}`, `data "aws_widget" "w" {}
data "aws_widgets" "x" {}
resource "aws_gadget" "g" {}`, []string{
			"data source type aws_widgets does not exist in hashicorp/aws 9.9.9 (did you mean aws_widget?)",
			"resource type aws_gadget does not exist",
		}},
		{"attributes that do not exist", `aws_widget.a[0].arn, aws_widget.a[*].name`, `aws_widget.a[0].rn, aws_widget.a[*].nam, data.aws_widget.w.owners`, []string{
			"aws_widget.a.rn: aws_widget has no attribute rn in hashicorp/aws 9.9.9 (did you mean arn?)",
			"aws_widget.a.nam: aws_widget has no attribute nam",
			"data.aws_widget.w.owners: aws_widget has no attribute owners",
		}},
		{"nested attributes that do not exist", `aws_widget.a[0].rule[0].target[0].cidr, aws_widget.a[0].rule[*].rule_id, aws_widget.a[count.index].status[0].code`,
			`aws_widget.a[0].rule[0].target[0].cdir, aws_widget.a[0].rule[*].rule, aws_widget.a[count.index].status[0].cod`, []string{
				"main.tf:60: aws_widget.a.rule[…].target[…].cdir: aws_widget's rule.target block has no attribute cdir in hashicorp/aws 9.9.9 (did you mean cidr?)",
				"main.tf:60: aws_widget.a.rule[…].rule: aws_widget's rule block has no attribute rule",
				"main.tf:60: aws_widget.a.status[…].cod: aws_widget's status has no attribute cod",
			}},
		{"indexed by key", `aws_widget.b["x"].settings[0].mode`, `aws_widget.b["x"].setting`, []string{
			`main.tf:61: aws_widget.b.setting: aws_widget has no attribute setting in hashicorp/aws 9.9.9 (did you mean settings?)`,
		}},
		{"splat of a splat", `aws_widget.a[0].rule[*].rule_id`, `aws_widget.a[*].rule[*].rule_ids`, []string{
			"aws_widget.a.rule[…].rule_ids: aws_widget's rule block has no attribute rule_ids",
		}},
		{"an index to one instance", `aws_big_thing.b.setting, aws_widget.a,`, `aws_big_thing.b[0].setting, aws_widget.a,`, []string{
			"main.tf:59: aws_big_thing.b has neither count nor for_each: it is one instance, a reference to it takes no index",
		}},
		{"a splat of one instance", `aws_big_thing.b.setting, aws_widget.a,`, `aws_big_thing.b[*].setting, aws_widget.a,`, nil},
		{"no index to counted instances", `value = aws_widget.a[1].size`, `value = aws_widget.a.size`, []string{
			"main.tf:64: aws_widget.a.size: aws_widget.a has count: read the attribute of one instance (aws_widget.a[…].size) or of all (aws_widget.a[*].size)",
		}},
		{"moved blocks name past instances", `output "o" {`, `moved {
  from = aws_big_thing.b[0]
  to   = aws_big_thing.b
}
output "o" {`, nil},
		{"a list of blocks read without an index", `aws_widget.a[0].rule[0].target[0].cidr,`, `aws_widget.a[0].rule.port,`, []string{
			"main.tf:60: aws_widget.a.rule.port: aws_widget.a.rule is a list of rule blocks: read one's attribute (rule[0].port) or all of theirs (rule[*].port)",
		}},
		{"lifecycle argument misspelt", "    prevent_destroy = true\n", "    prevent_destory = true\n", []string{
			"main.tf:45: aws_widget.a.lifecycle: no argument prevent_destory in a lifecycle block (did you mean prevent_destroy?)",
		}},
		{"ignore_changes of no such attribute", `ignore_changes  = [tags["n"], rule]`, `ignore_changes  = [tag, rule]`, []string{
			"main.tf:46: aws_widget.a.lifecycle: ignore_changes names tag, which aws_widget does not have (did you mean tags?)",
		}},
		{"count and for_each", "  for_each = toset([\"x\"])\n", "  for_each = toset([\"x\"])\n  count    = 1\n", []string{
			"main.tf:50: aws_widget.b: count and for_each exclude each other",
		}},
		{"declared twice", `resource "aws_big_thing" "b" {`, `resource "aws_big_thing" "b" {
  setting {}
}
resource "aws_big_thing" "b" {`, []string{
			"main.tf:58: aws_big_thing.b is declared twice in this module (first at main.tf:55)",
		}},
		{"depends_on an attribute", "  depends_on = [data.aws_widget.w]\n", "  depends_on = [data.aws_widget.w.owner]\n", []string{
			"main.tf:12: aws_widget.a: depends_on names data.aws_widget.w.owner, an attribute: it takes whole resources and data sources",
		}},
		{"objects", `ingress  = [{ from_port = 1 }]`, `ingress  = [{ from_port = "443" }, { from_port = var.p }, var.o]`, nil},
		{"objects of the wrong type", `ingress  = [{ from_port = 1 }]`, `ingress  = [{ from_port = "a", to = 2 }, "x"]`, []string{
			`main.tf:53: aws_widget.b: ingress = [{ from_port = "a", to = 2 }, "x"]: from_port: Terraform cannot convert a string to number (a number is required)`,
			`main.tf:53: aws_widget.b: ingress = [{ from_port = "a", to = 2 }, "x"]: no attribute to in the objects of aws_widget's ingress`,
			`main.tf:53: aws_widget.b: ingress = [{ from_port = "a", to = 2 }, "x"]: Terraform cannot convert a string to an object`,
		}},
		{"not objects", `ingress  = [{ from_port = 1 }]`, `ingress  = 443`, []string{
			`main.tf:53: aws_widget.b: ingress = 443: Terraform cannot convert a number to objects`,
		}},
		{"undeclared", `value = aws_widget.a[1].size`, `value = aws_widget.c.size`, []string{"main.tf:64: aws_widget.c is not declared in this module"}},
		{"provider argument", `  region = "us-east-1"`, `  regoin = "us-east-1"`, []string{"provider aws: no argument regoin in the aws provider (did you mean region?)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Count(good, tt.old) != 1 && tt.old != "" {
				t.Fatalf("%q is not in the configuration once", tt.old)
			}
			src := strings.Replace(good, tt.old, tt.new, 1)
			var sum Summary
			findings := s.CheckModule(parseModule(t, src), &sum)
			if len(findings) != len(tt.want) {
				t.Errorf("got %d findings, want %d: %v", len(findings), len(tt.want), findings)
			}
			for _, w := range tt.want {
				found := false
				for _, f := range findings {
					found = found || strings.Contains(f.String(), w)
				}
				if !found {
					t.Errorf("no finding says %q: %v", w, findings)
				}
			}
			if tt.name == "good" && (sum.Resources != 3 || sum.DataSources != 1 || sum.Providers != 1 || sum.References != 15) {
				t.Errorf("summary %+v", sum)
			}
		})
	}
}
