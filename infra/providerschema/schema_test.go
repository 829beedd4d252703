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
)

// testdata/pkg is a package laid out as @cdktf/provider-aws is, with one of each thing the
// extraction meets there: nested blocks in blocks, a property cdktf renamed, structs split into
// index-structs/, a renamed configuration struct, a data source without arguments, the provider,
// and a folder without a resource class.
const fixture = "testdata/pkg"

func TestExtract(t *testing.T) {
	s, err := Extract(fixture)
	if err != nil {
		t.Fatal(err)
	}
	want := &Schema{
		Format: format, Package: Package, PackageVersion: "0.0.1-test",
		Provider: "registry.terraform.io/hashicorp/aws", ProviderVersion: "9.9.9",
		ProviderConfig: &Block{
			Args:   map[string]bool{"region": false},
			Blocks: map[string]*Nested{"default_tags": {Block: Block{Args: map[string]bool{"tags": false}}}},
			Attrs:  []string{"default_tags", "region"},
		},
		Resources: map[string]*Block{
			"aws_widget": {
				Args: map[string]bool{"name": true, "size": false, "get_secret": false, "tags": false},
				Blocks: map[string]*Nested{"rule": {Block: Block{
					Args:   map[string]bool{"port": true},
					Blocks: map[string]*Nested{"target": {Block: Block{Args: map[string]bool{"cidr": true}}}},
				}}},
				// the arguments, the block, and arn; not the nested block's port
				Attrs: []string{"arn", "get_secret", "name", "rule", "size", "tags"},
			},
			"aws_big_thing": {
				Blocks: map[string]*Nested{"setting": {Required: true, Block: Block{Args: map[string]bool{"value": false}}}},
				Attrs:  []string{"setting"},
			},
		},
		DataSources: map[string]*Block{"aws_widget": {Attrs: []string{"owner"}}},
	}
	if !reflect.DeepEqual(s, want) {
		got, _ := json.MarshalIndent(s, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("got\n%s\nwant\n%s", got, w)
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
	cache := filepath.Join(root, CacheDir, "aws-0.0.1-test.format1.json")
	st, err := os.Stat(cache)
	if err != nil {
		t.Fatalf("no cache: %v", err)
	}
	if st.Mode().Perm()&0o044 != 0o044 {
		t.Errorf("cache mode %v: others cannot read it", st.Mode())
	}
	// The package's index files are no longer read: the cache answers.
	if err := os.RemoveAll(filepath.Join(root, PackageDir, "lib")); err != nil {
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
  lifecycle {
    prevent_destroy = true
  }
}
resource "aws_big_thing" "b" {
  setting {}
}
resource "terraform_data" "other" {
  input = [aws_widget.a[0].arn, aws_widget.a[*].name, one(aws_widget.a[*].tags), aws_big_thing.b.setting, aws_widget.a]
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
		{"argument as a block", "  lifecycle {", "  size {\n  }\n  lifecycle {", []string{"aws_widget.a: size is an argument, not a block"}},
		{"nested block misspelt", "    target {\n      cidr = \"10.0.0.0/8\"", "    targte {\n      cidr = \"10.0.0.0/8\"", []string{
			"aws_widget.a.rule: no block targte in aws_widget's rule block (did you mean target?)",
		}},
		{"in a dynamic block's content", "          cidr = target.value", "          cdir = target.value", []string{
			"aws_widget.a.rule.target: no argument cdir in aws_widget's rule.target block (did you mean cidr?)",
			"aws_widget.a.rule.target: missing required argument cidr",
		}},
		{"dynamic block of no such block", `dynamic "rule" {`, `dynamic "rules" {`, []string{"aws_widget.a: no block rules in aws_widget (did you mean rule?)"}},
		{"missing required block", "  setting {}\n", "", []string{"aws_big_thing.b: missing required block setting"}},
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
		{"undeclared", `value = aws_widget.a[1].size`, `value = aws_widget.b.size`, []string{"main.tf:43: aws_widget.b is not declared in this module"}},
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
			if tt.name == "good" && (sum.Resources != 2 || sum.DataSources != 1 || sum.Providers != 1 || sum.References != 8) {
				t.Errorf("summary %+v", sum)
			}
		})
	}
}
