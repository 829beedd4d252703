package terraform

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
	"github.com/idgen/idgen/services/registry/store/dynamostore"
)

// tableSpec is what a driver expects of a table.
type tableSpec struct {
	hash, rangeKey string
	attrs          map[string]string // attribute name => type (N, S)
	ttl            string            // TTL attribute, "" for none
	class          string            // table class, "" for the default (STANDARD)
}

// The public-ID store of record: one table per region (the driver's default name), keyed by k
// (S) alone, TTL on x (tokens expire), infrequent-access class (a mapping is written once and read
// rarely after its first days).
const (
	publicIDTable   = dynamomap.DefaultTable
	publicIDKey     = dynamomap.KeyK
	publicIDExpires = dynamomap.AttrTTL
)

var (
	leaseSpec = tableSpec{hash: dynamolease.KeyMachineID, attrs: map[string]string{dynamolease.KeyMachineID: "N"}}
	// tableSpecs are the tables the drivers use, by name.
	tableSpecs = map[string]tableSpec{
		lease.TableV2: leaseSpec,
		lease.TableV1: leaseSpec,
		lease.TableHistory: {
			hash: dynamolease.KeyMachineID, rangeKey: dynamolease.KeyAt,
			attrs: map[string]string{dynamolease.KeyMachineID: "N", dynamolease.KeyAt: "N"},
			ttl:   dynamolease.AttrExpiresAt,
		},
		region.RegistryTable: {hash: dynamostore.KeyPK, attrs: map[string]string{dynamostore.KeyPK: "S"}},
		publicIDTable: {hash: publicIDKey, attrs: map[string]string{publicIDKey: "S"}, ttl: publicIDExpires,
			class: "STANDARD_INFREQUENT_ACCESS"},
		// Terraform's s3 backend locks a state with a conditional write of an item keyed LockID.
		lockTable: {hash: "LockID", attrs: map[string]string{"LockID": "S"}},
	}
	// tablesOf is where each table is defined.
	tablesOf = map[string][]string{
		regionDir:       {lease.TableV2, lease.TableHistory},
		registryDir:     {region.RegistryTable},
		registryRootDir: {lease.TableV1},
		publicIDDir:     {publicIDTable},
		bootstrapDir:    {lockTable},
	}
)

// lockTable is the state lock table of the bootstrap root.
const lockTable = "idgen-terraform-locks"

// checkTables: every aws_dynamodb_table is one the drivers use (or the state lock table), with their keys, attribute types
// and TTL attribute; it has point-in-time recovery, deletion protection, server-side encryption
// and prevent_destroy, and no replica (never a global table). It returns the tables' names.
func checkTables(c config) (names []string, problems []string) {
	for _, b := range c.blocks("resource", "aws_dynamodb_table") {
		bad := func(format string, args ...any) {
			problems = append(problems, at(b)+": "+fmt.Sprintf(format, args...))
		}
		name := literalString(b, "name")
		spec, ok := tableSpecs[name]
		if !ok {
			bad("name %q is not a table the drivers use (%v)", name, slices.Sorted(maps.Keys(tableSpecs)))
			continue
		}
		names = append(names, name)
		if got := literalString(b, "hash_key"); got != spec.hash {
			bad("hash_key %q, want %q", got, spec.hash)
		}
		if got := literalString(b, "range_key"); got != spec.rangeKey {
			bad("range_key %q, want %q", got, spec.rangeKey)
		}
		if got := literalString(b, "billing_mode"); got != "PAY_PER_REQUEST" {
			bad("billing_mode %q, want PAY_PER_REQUEST (on demand)", got)
		}
		if got := literalString(b, "table_class"); got != spec.class && !(got == "STANDARD" && spec.class == "") {
			bad("table_class %q, want %q", got, spec.class)
		}
		attrs := map[string]string{}
		for _, a := range nested(b, "attribute") {
			attrs[literalString(a, "name")] = literalString(a, "type")
		}
		if !maps.Equal(attrs, spec.attrs) {
			bad("attributes %v, want %v", attrs, spec.attrs)
		}
		ttl := nested(b, "ttl")
		switch {
		case spec.ttl == "" && len(ttl) > 0:
			bad("has a TTL; the driver expects none")
		case spec.ttl != "" && (len(ttl) != 1 || literalString(ttl[0], "attribute_name") != spec.ttl || !literalBool(ttl[0], "enabled")):
			bad("needs ttl { attribute_name = %q, enabled = true }", spec.ttl)
		}
		if pitr := nested(b, "point_in_time_recovery"); len(pitr) != 1 || !literalBool(pitr[0], "enabled") {
			bad("needs point_in_time_recovery { enabled = true }")
		}
		if !literalBool(b, "deletion_protection_enabled") {
			bad("needs deletion_protection_enabled = true")
		}
		if sse := nested(b, "server_side_encryption"); len(sse) != 1 || !literalBool(sse[0], "enabled") {
			bad("needs server_side_encryption { enabled = true }")
		}
		if lc := nested(b, "lifecycle"); len(lc) != 1 || !literalBool(lc[0], "prevent_destroy") {
			bad("needs lifecycle { prevent_destroy = true }")
		}
		if hasNested(b, "replica") {
			bad("has a replica: idgen's tables are region-local, never DynamoDB global tables")
		}
	}
	return names, problems
}

func TestTables(t *testing.T) {
	for _, dir := range moduleDirs {
		t.Run(dir, func(t *testing.T) {
			names, problems := checkTables(parseDir(t, dir))
			wantProblems(t, problems)
			want := tablesOf[dir]
			slices.Sort(names)
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Errorf("tables %v, want %v", names, want)
			}
		})
	}
}

func TestTablesCatch(t *testing.T) {
	const good = `resource "aws_dynamodb_table" "t" {
  name                        = "idgen-lease-history"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "machine_id"
  range_key                   = "at"
  deletion_protection_enabled = true
  attribute {
    name = "machine_id"
    type = "N"
  }
  attribute {
    name = "at"
    type = "N"
  }
  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }
  point_in_time_recovery { enabled = true }
  server_side_encryption { enabled = true }
  %s
  lifecycle { prevent_destroy = true }
}`
	cases := []struct {
		name, src string
		want      []string
	}{
		{"good", fmt.Sprintf(good, ""), nil},
		{"replica", fmt.Sprintf(good, `replica { region_name = "us-west-2" }`), []string{"replica"}},
		{"dynamic replica", fmt.Sprintf(good, `dynamic "replica" {
    for_each = ["us-west-2"]
    content { region_name = replica.value }
  }`), []string{"replica"}},
		{"unknown name", `resource "aws_dynamodb_table" "t" { name = "idgen-leases-v3" }`, []string{"not a table the drivers use"}},
		{"name not literal", `resource "aws_dynamodb_table" "t" { name = var.name }`, []string{"not a table the drivers use"}},
		{"wrong keys, no protection", `resource "aws_dynamodb_table" "t" {
  name     = "idgen-leases-v2"
  hash_key = "machine"
  attribute {
    name = "machine"
    type = "S"
  }
  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }
  point_in_time_recovery { enabled = false }
  deletion_protection_enabled = false
}`, []string{"hash_key", "billing_mode", "attributes", "has a TTL", "point_in_time_recovery", "deletion_protection_enabled", "server_side_encryption", "prevent_destroy"}},
		{"history without TTL, registry key N", `resource "aws_dynamodb_table" "h" {
  name                        = "idgen-lease-history"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "machine_id"
  range_key                   = "at"
  deletion_protection_enabled = true
  attribute {
    name = "machine_id"
    type = "N"
  }
  attribute {
    name = "at"
    type = "N"
  }
  point_in_time_recovery { enabled = true }
  server_side_encryption { enabled = true }
  lifecycle { prevent_destroy = true }
}
resource "aws_dynamodb_table" "r" {
  name                        = "idgen-regions"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  deletion_protection_enabled = true
  attribute {
    name = "pk"
    type = "N"
  }
  point_in_time_recovery { enabled = true }
  server_side_encryption { enabled = true }
  lifecycle { prevent_destroy = true }
}`, []string{"needs ttl", "attributes map[pk:N]"}},
		{"public IDs: provisioned, standard class, a range key, TTL elsewhere", `resource "aws_dynamodb_table" "p" {
  name                        = "idgen-public-ids"
  billing_mode                = "PROVISIONED"
  hash_key                    = "k"
  range_key                   = "r"
  deletion_protection_enabled = true
  attribute {
    name = "k"
    type = "S"
  }
  attribute {
    name = "r"
    type = "S"
  }
  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }
  point_in_time_recovery { enabled = true }
  server_side_encryption { enabled = true }
  lifecycle { prevent_destroy = true }
}`, []string{"billing_mode \"PROVISIONED\"", "table_class \"\", want \"STANDARD_INFREQUENT_ACCESS\"", "range_key \"r\"", "attributes map[k:S r:S]", "needs ttl { attribute_name = \"x\""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := checkTables(parse(t, "snippet.tf", tc.src))
			wantProblems(t, problems, tc.want...)
		})
	}
}
