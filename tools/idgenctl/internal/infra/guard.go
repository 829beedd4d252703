// Package infra drives the Terraform of infra/terraform through terraform-exec, one root at a
// time (the bootstrap root, the registry root, one root per region, each with a state of its
// own in the s3 backend), and guards every apply: a plan that would delete or replace a lease,
// history or registry table, turn off its point-in-time recovery or deletion protection, make a
// lease table global, or change, reuse or drop a region's number is refused. Those are the
// changes that can make an ID repeat, or lose the record of who issued one. So is one that would
// delete or replace the state bucket, its KMS key or the lock table, or suspend the bucket's
// versioning: that loses the record of what Terraform manages. And one that would delete or
// replace a region's public-ID table (idgen-public-ids), turn off its recovery or protection or
// make it global (every public ID a customer holds resolves through it), or delete, replace or
// weaken a region's public-ID Redis (its encryption, Multi-AZ, automatic failover).
package infra

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/region"
)

// protectedTables are the tables whose loss or rollback breaks a promise: a lease table restored
// or recreated gives numbers out again from stale rows, the history answers who issued an ID, and
// the registry keeps region numbers from being reused.
var protectedTables = map[string]string{
	lease.TableV2:        "lease",
	lease.TableV1:        "lease",
	lease.TableHistory:   "lease history",
	region.RegistryTable: "registry",
	StateLockTable:       "state lock",
	PublicIDTable:        "public-ID",
}

// PublicIDTable is each region's public-ID store of record: a mapping lost from it is a public ID
// a customer holds that no longer resolves, and public IDs are random, so it cannot be made again.
const PublicIDTable = "idgen-public-ids"

// PublicIDCachePrefix begins the replication group ID of each region's public-ID Redis
// (idgen-public-id-<region>): the programs' hot cache and the gateways' shared rate limit.
const PublicIDCachePrefix = "idgen-public-id-"

// The bootstrap root's state bucket (its name: StateBucketPrefix<account>-<region>), its KMS key
// (by its description) and its lock table.
const (
	StateBucketPrefix = "idgen-tfstate-"
	StateKeyPrefix    = "idgen Terraform state"
	StateLockTable    = "idgen-terraform-locks"
)

// Refusal is one change the guard refuses.
type Refusal struct {
	Address string // the resource or output address
	Why     string
}

func (r Refusal) String() string { return r.Address + ": " + r.Why }

// Checked summarises what the guard looked at.
type Checked struct {
	Resources, Tables, Caches, Outputs int
}

// CheckPlan returns the refusals of a plan (terraform show -json), in address order.
func CheckPlan(p *tfjson.Plan) ([]Refusal, Checked) {
	var out []Refusal
	var c Checked
	for _, rc := range p.ResourceChanges {
		if rc.Change == nil || rc.Mode != tfjson.ManagedResourceMode {
			continue
		}
		c.Resources++
		switch rc.Type {
		case "aws_dynamodb_table":
			if r := checkTable(rc); r != nil || isProtected(rc) {
				c.Tables++
				out = append(out, r...)
			}
		case "aws_s3_bucket", "aws_s3_bucket_versioning", "aws_kms_key":
			out = append(out, checkState(rc)...)
		case "aws_elasticache_replication_group":
			if strings.HasPrefix(attr(rc, "replication_group_id"), PublicIDCachePrefix) {
				c.Caches++
				out = append(out, checkCache(rc)...)
			}
		}
	}
	if oc, ok := p.OutputChanges["regions"]; ok && oc != nil {
		c.Outputs++
		out = append(out, checkRegions(oc, retired(p))...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, c
}

// checkState refuses a change that loses the states: deleting or replacing the state bucket or
// its KMS key, or suspending (or removing) the bucket's versioning.
func checkState(rc *tfjson.ResourceChange) []Refusal {
	var name string
	switch rc.Type {
	case "aws_kms_key":
		if d := attr(rc, "description"); !strings.HasPrefix(d, StateKeyPrefix) {
			return nil
		}
		name = "the KMS key of the Terraform states"
	default:
		if b := attr(rc, "bucket"); !strings.HasPrefix(b, StateBucketPrefix) {
			return nil
		}
		name = "the Terraform state bucket " + attr(rc, "bucket")
	}
	var out []Refusal
	a := rc.Change.Actions
	switch {
	case a.Replace():
		out = append(out, Refusal{rc.Address, "replaces (deletes and re-creates) " + name + ": every root's state and its history are in it"})
	case a.Delete():
		out = append(out, Refusal{rc.Address, "deletes " + name + ": every root's state and its history are in it"})
	}
	if rc.Type == "aws_s3_bucket_versioning" && !a.Delete() {
		after, _ := rc.Change.After.(map[string]any)
		list, _ := after["versioning_configuration"].([]any)
		status := ""
		if len(list) > 0 {
			m, _ := list[0].(map[string]any)
			status, _ = m["status"].(string)
		}
		if status != "Enabled" {
			out = append(out, Refusal{rc.Address, fmt.Sprintf("versioning %q on %s: an earlier state could not be restored", status, name)})
		}
	}
	return out
}

// attr reads a string attribute of a change, after or else before.
func attr(rc *tfjson.ResourceChange, name string) string {
	for _, v := range []any{rc.Change.After, rc.Change.Before} {
		if m, ok := v.(map[string]any); ok {
			if s, ok := m[name].(string); ok {
				return s
			}
		}
	}
	return ""
}

func isProtected(rc *tfjson.ResourceChange) bool {
	_, ok := protectedTables[tableName(rc)]
	return ok
}

func tableName(rc *tfjson.ResourceChange) string { return attr(rc, "name") }

func checkTable(rc *tfjson.ResourceChange) []Refusal {
	name := tableName(rc)
	kind, ok := protectedTables[name]
	if !ok {
		return nil
	}
	var out []Refusal
	refuse := func(format string, args ...any) {
		out = append(out, Refusal{rc.Address, fmt.Sprintf(format, args...)})
	}
	a := rc.Change.Actions
	switch {
	case a.Replace():
		refuse("replaces (deletes and re-creates) the %s table %s", kind, name)
	case a.Delete():
		refuse("deletes the %s table %s", kind, name)
	}
	after, ok := rc.Change.After.(map[string]any)
	if !ok {
		return out
	}
	if !nestedBool(after, "point_in_time_recovery", "enabled") {
		refuse("point-in-time recovery off on the %s table %s", kind, name)
	}
	if v, _ := after["deletion_protection_enabled"].(bool); !v {
		refuse("deletion protection off on the %s table %s", kind, name)
	}
	if reps, _ := after["replica"].([]any); len(reps) > 0 {
		switch kind {
		case "lease":
			refuse("replicas make the lease table %s a global table: its conditional claims would not be exclusive across regions", name)
		case "public-ID":
			refuse("replicas make the public-ID table %s a global table: it resolves concurrent writes last-writer-wins, where a mapping is first-writer-wins (the service copies each mapping to its owner region's peer itself)", name)
		}
	}
	return out
}

// checkCache refuses deleting or replacing a region's public-ID Redis (a new group has a new
// endpoint, which the hosts read only at boot: every cache lookup and the gateways' rate limit
// fail until each host is replaced) and turning off what keeps it safe and up: encryption in
// transit (the AUTH token and the mappings would cross the network in clear) and at rest,
// Multi-AZ and automatic failover.
func checkCache(rc *tfjson.ResourceChange) []Refusal {
	id := attr(rc, "replication_group_id")
	var out []Refusal
	refuse := func(format string, args ...any) {
		out = append(out, Refusal{rc.Address, fmt.Sprintf(format, args...)})
	}
	a := rc.Change.Actions
	switch {
	case a.Replace():
		refuse("replaces (deletes and re-creates) the public-ID Redis %s: its endpoint changes, and the hosts read it only at boot", id)
	case a.Delete():
		refuse("deletes the public-ID Redis %s: the public-ID programs of its region lose their cache and the gateways their rate limit", id)
	}
	after, ok := rc.Change.After.(map[string]any)
	if !ok {
		return out
	}
	for _, s := range []struct{ attr, what string }{
		{"transit_encryption_enabled", "encryption in transit"},
		{"at_rest_encryption_enabled", "encryption at rest"},
		{"multi_az_enabled", "Multi-AZ"},
		{"automatic_failover_enabled", "automatic failover"},
	} {
		if v, _ := after[s.attr].(bool); !v {
			refuse("%s off on the public-ID Redis %s", s.what, id)
		}
	}
	return out
}

// nestedBool reads block[0].attr of a nested block list.
func nestedBool(m map[string]any, block, attr string) bool {
	list, _ := m[block].([]any)
	if len(list) == 0 {
		return false
	}
	inner, _ := list[0].(map[string]any)
	v, _ := inner[attr].(bool)
	return v
}

// retired returns the retired region numbers a plan knows: the root variable retired_numbers
// (the topology module planned as a root), and the default of the topology module's variable
// where the root calls it (every root of live/).
func retired(p *tfjson.Plan) []int {
	var out []int
	add := func(v any) {
		list, _ := v.([]any)
		for _, n := range list {
			if f, ok := n.(float64); ok {
				out = append(out, int(f))
			}
		}
	}
	if v, ok := p.Variables["retired_numbers"]; ok && v != nil {
		add(v.Value)
	}
	if p.Config != nil && p.Config.RootModule != nil {
		for _, call := range p.Config.RootModule.ModuleCalls {
			if call == nil || call.Module == nil || !strings.HasSuffix(call.Source, "modules/topology") {
				continue
			}
			if v, ok := call.Module.Variables["retired_numbers"]; ok && v != nil {
				add(v.Default)
			}
		}
	}
	return out
}

// regionNumbers reads the regions output: name → number.
func regionNumbers(v any) map[string]int {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]int{}
	for name, r := range m {
		if rm, ok := r.(map[string]any); ok {
			if f, ok := rm["number"].(float64); ok {
				out[name] = int(f)
			}
		}
	}
	return out
}

func checkRegions(oc *tfjson.Change, retiredNumbers []int) []Refusal {
	const addr = "output.regions"
	before, after := regionNumbers(oc.Before), regionNumbers(oc.After)
	var out []Refusal
	refuse := func(format string, args ...any) {
		out = append(out, Refusal{addr, fmt.Sprintf(format, args...)})
	}
	holder := map[int]string{}
	for name, n := range before {
		holder[n] = name
	}
	for _, name := range sortedKeys(before) {
		n := before[name]
		m, still := after[name]
		switch {
		case !still && oc.After != nil:
			if !slices.Contains(retiredNumbers, n) {
				refuse("region %s (number %d) leaves the topology without its number in retired_numbers: retire it, so the number stays reserved", name, n)
			}
		case still && m != n:
			refuse("region %s changes number %d → %d: a region's number never changes (its IDs carry it)", name, n, m)
		}
	}
	for _, name := range sortedKeys(after) {
		n := after[name]
		if prev, ok := holder[n]; ok && prev != name {
			refuse("region %s is given number %d, which was region %s's: numbers are never reused", name, n, prev)
		}
		if slices.Contains(retiredNumbers, n) {
			refuse("region %s is given number %d, which is retired", name, n)
		}
	}
	return out
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Summary is the guard's one line for a plan it lets through.
func (c Checked) Summary() string {
	return fmt.Sprintf("plan guard: %d resource changes checked (%d protected tables, %d protected caches), %d region outputs; nothing refused",
		c.Resources, c.Tables, c.Caches, c.Outputs)
}

// Report is the guard's lines for refusals.
func Report(rs []Refusal) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "refused: %s\n", r)
	}
	return b.String()
}
