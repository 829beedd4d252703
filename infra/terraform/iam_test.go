package terraform

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
	"github.com/idgen/idgen/services/registry/store/dynamostore"
)

// grants is what one module's IAM policies may grant on DynamoDB: exactly the driver's actions,
// on exactly the module's own tables.
var grants = map[string]grantSpec{
	regionDir:   {actions: map[string][]string{"": dynamolease.GeneratorActions}},
	registryDir: {actions: map[string][]string{"": dynamostore.Actions}},
	// The public-ID programs, each with a role of its own, on the table of every region (the
	// service writes a mapping to its owner region and that region's peer, and reads the others on
	// a local miss): local.table_arns, whose value TestPublicIDTableARNs holds to the topology.
	// TransactWriteItems of Puts is granted as dynamodb:PutItem (AWS: "Permissions for Put,
	// Update, Delete, and Get actions are governed by the permissions used for the underlying
	// PutItem, UpdateItem, DeleteItem, and GetItem operations").
	publicIDDir: {
		actions: map[string][]string{
			"public_id": publicIDActions,
			"gateway":   gatewayActions,
		},
		tableRefs: []string{"local.table_arns"},
	},
	// The DynamoDB interface endpoint's policy (what may be done through it, whoever calls): the
	// internal API's actions, the widest of the public-ID programs', on this region's public-ID
	// table (local.dynamodb_table_arns, whose value TestDynamoDBEndpoints holds).
	endpointsDir: {
		actions:   map[string][]string{"dynamodb": publicIDActions},
		tableRefs: []string{"local.dynamodb_table_arns"},
	},
	// every other module and root: none
}

// The public-ID programs' DynamoDB actions: the internal API's, the driver's (dynamomap.Actions:
// it scans, to refill a region whose table comes back empty from the other regions'), and the
// gateway's, the same without Scan (the refill is the internal API's). Nothing deletes, updates or
// manages a table.
var (
	publicIDActions = dynamomap.Actions
	gatewayActions  = slices.DeleteFunc(slices.Clone(dynamomap.Actions), func(a string) bool { return a == "dynamodb:Scan" })
)

// TestPublicIDActions: the driver's actions are the four the module README names, and the
// gateway's the three without Scan, so a change of the driver shows here and in the README.
func TestPublicIDActions(t *testing.T) {
	if want := []string{"dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Scan"}; !slices.Equal(publicIDActions, want) {
		t.Errorf("dynamomap.Actions %v, want %v (update modules/public-id and its README)", publicIDActions, want)
	}
	if want := []string{"dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem"}; !slices.Equal(gatewayActions, want) {
		t.Errorf("the gateway's actions %v, want %v", gatewayActions, want)
	}
}

// grantSpec is what a module may grant: per policy document (by name; "" for any document of
// the module), exactly these DynamoDB actions; on the ARNs of the module's own tables, or on one
// of tableRefs (references evaluated elsewhere to the tables they stand for).
type grantSpec struct {
	actions   map[string][]string
	tableRefs []string
}

// managedPolicies are the AWS managed policies a role may have attached: Session Manager and Run
// Command, which the runbooks use.
var managedPolicies = []string{"AmazonSSMManagedInstanceCore"}

var policyRef = regexp.MustCompile(`^(data\.aws_iam_policy_document\.[A-Za-z0-9_-]+\.json|var\.[A-Za-z0-9_]+)$`)

// checkPolicies: every statement of every aws_iam_policy_document grants no wildcard, and
// DynamoDB actions only from allowed, only on aws_dynamodb_table resources of this module; when
// allowed is not empty, the module grants all of them on all its tables. Every inline or
// customer policy is such a document (or a variable holding one, checked where it is built);
// attached managed policies are only managedPolicies.
func checkPolicies(c config, allowed []string) []string {
	return checkGrants(c, grantSpec{actions: map[string][]string{"": allowed}})
}

// checkGrants is checkPolicies with per-document actions and table references (grantSpec); every
// document named in g.actions grants all its actions.
func checkGrants(c config, g grantSpec) []string {
	var problems []string
	tables := map[string]bool{}
	for _, b := range c.blocks("resource", "aws_dynamodb_table") {
		tables[b.Labels[1]] = true
	}
	granted, covered := map[string]map[string]bool{}, map[string]bool{}
	byRef := false
	for _, doc := range c.blocks("data", "aws_iam_policy_document") {
		key := doc.Labels[1]
		allowed, named := g.actions[key]
		if !named {
			key = ""
			allowed = g.actions[""]
		}
		if granted[key] == nil {
			granted[key] = map[string]bool{}
		}
		for _, st := range nested(doc, "statement") {
			bad := func(format string, args ...any) {
				problems = append(problems, at(doc)+" statement: "+fmt.Sprintf(format, args...))
			}
			for _, not := range []string{"not_actions", "not_resources"} {
				if st.Body.Attributes[not] != nil {
					bad("uses %s", not)
				}
			}
			actions, err := literalStrings(st, "actions")
			if err != nil {
				bad("actions: %v", err)
				continue
			}
			// A Deny takes away: the state bucket's TLS-only statement denies s3:* to everyone.
			if literalString(st, "effect") == "Deny" {
				continue
			}
			dynamo := false
			for _, a := range actions {
				switch {
				case strings.Contains(a, "*"):
					bad("grants wildcard %s", a)
				case strings.HasPrefix(strings.ToLower(a), "dynamodb:"):
					dynamo = true
					if !slices.Contains(allowed, a) {
						bad("grants %s, which is not one of the driver's actions %v", a, allowed)
					}
					granted[key][a] = true
				}
			}
			if !dynamo {
				continue
			}
			res, ok := st.Body.Attributes["resources"]
			if !ok {
				bad("grants DynamoDB actions with no resources")
				continue
			}
			for _, r := range tupleItems(res.Expr) {
				if slices.Contains(g.tableRefs, strings.TrimSpace(c.source(r.Range()))) {
					byRef = true
					continue
				}
				s := steps(traversalOf(r))
				// aws_dynamodb_table.NAME.arn, or aws_dynamodb_table.NAME[0].arn.
				if len(s) >= 3 && s[0] == "aws_dynamodb_table" && tables[s[1]] && s[len(s)-1] == "arn" && (len(s) == 3 || len(s) == 4 && s[2] == "[index]") {
					covered[s[1]] = true
					continue
				}
				bad("grants DynamoDB actions on %s, which is not the ARN of one of this module's tables", strings.TrimSpace(c.source(r.Range())))
			}
		}
	}
	for _, key := range sortedKeys(g.actions) {
		for _, a := range g.actions[key] {
			if !granted[key][a] {
				where := ""
				if key != "" {
					where = " by aws_iam_policy_document." + key
				}
				problems = append(problems, fmt.Sprintf("the driver's action %s is granted on no table%s", a, where))
			}
		}
	}
	if len(g.actions[""]) > 0 || len(g.actions) > 1 {
		for _, name := range sortedKeys(tables) {
			if !covered[name] && !byRef {
				problems = append(problems, fmt.Sprintf("table aws_dynamodb_table.%s is granted to no one", name))
			}
		}
	}
	for _, typ := range []string{"aws_iam_role_policy", "aws_iam_policy"} {
		for _, b := range c.blocks("resource", typ) {
			a, ok := b.Body.Attributes["policy"]
			if !ok || !policyRef.MatchString(strings.TrimSpace(c.source(a.Expr.Range()))) {
				problems = append(problems, at(b)+": policy must be an aws_iam_policy_document's json (or a variable holding one), so its statements are checked")
			}
		}
	}
	for _, b := range c.blocks("resource", "aws_iam_role_policy_attachment") {
		a, ok := b.Body.Attributes["policy_arn"]
		src := ""
		if ok {
			src = strings.Trim(strings.TrimSpace(c.source(a.Expr.Range())), `"`)
		}
		if !slices.ContainsFunc(managedPolicies, func(p string) bool { return strings.HasSuffix(src, ":policy/"+p) }) {
			problems = append(problems, fmt.Sprintf("%s: attaches %s; only %v may be attached", at(b), src, managedPolicies))
		}
	}
	return problems
}

// tupleItems returns the elements of a list written out, or the expression itself.
func tupleItems(e hclsyntax.Expression) []hclsyntax.Expression {
	if t, ok := e.(*hclsyntax.TupleConsExpr); ok {
		return t.Exprs
	}
	return []hclsyntax.Expression{e}
}

func TestPolicies(t *testing.T) {
	for _, dir := range moduleDirs {
		t.Run(dir, func(t *testing.T) {
			wantProblems(t, checkGrants(parseDir(t, dir), grants[dir]))
		})
	}
}

// TestFleetPolicyFromModule: the modules that run a fleet hand it their own checked document.
func TestFleetPolicyFromModule(t *testing.T) {
	for _, dir := range []string{regionDir, registryDir, publicIDDir} {
		c := parseDir(t, dir)
		fleets := 0
		for _, b := range c.blocks("module", "") {
			if literalString(b, "source") != "../fleet" {
				continue
			}
			fleets++
			a := b.Body.Attributes["policy_json"]
			s := []string{}
			if a != nil {
				s = steps(traversalOf(a.Expr))
			}
			if len(s) != 4 || s[0] != "data" || s[1] != "aws_iam_policy_document" || s[3] != "json" || len(c.blocks("data", "aws_iam_policy_document")) == 0 {
				t.Errorf("%s: module %s's policy_json must be data.aws_iam_policy_document.<this module's>.json, got %v", dir, b.Labels[0], s)
			}
		}
		if fleets == 0 {
			t.Errorf("%s calls no fleet", dir)
		}
	}
}

func TestPoliciesCatch(t *testing.T) {
	const tables = `resource "aws_dynamodb_table" "lease" { name = "idgen-leases-v2" }
resource "aws_dynamodb_table" "history" { name = "idgen-lease-history" }
`
	cases := []struct {
		name, src string
		allowed   []string
		want      []string
	}{
		{"good", tables + `data "aws_iam_policy_document" "p" {
  statement {
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.lease.arn, aws_dynamodb_table.history.arn]
  }
}`, dynamolease.GeneratorActions, nil},
		{"extra action", tables + `data "aws_iam_policy_document" "p" {
  statement {
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
    resources = [aws_dynamodb_table.lease.arn, aws_dynamodb_table.history.arn]
  }
}`, dynamolease.GeneratorActions, []string{"dynamodb:DeleteItem"}},
		{"wildcards", tables + `data "aws_iam_policy_document" "p" {
  statement {
    actions   = ["dynamodb:*"]
    resources = ["*"]
  }
  statement {
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.lease.arn, aws_dynamodb_table.history.arn]
  }
}`, dynamolease.GeneratorActions, []string{"wildcard dynamodb:*"}},
		{"another table", tables + `data "aws_iam_policy_document" "p" {
  statement {
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.lease.arn, aws_dynamodb_table.history.arn, "arn:aws:dynamodb:us-east-1:1:table/idgen-regions", var.other_table_arn]
  }
}`, dynamolease.GeneratorActions, []string{"table/idgen-regions", "var.other_table_arn"}},
		{"missing action and table", tables + `data "aws_iam_policy_document" "p" {
  statement {
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.lease.arn]
  }
}`, dynamolease.GeneratorActions, []string{"DescribeTable is granted on no table", "aws_dynamodb_table.history is granted"}},
		{"dynamic statement", tables + `data "aws_iam_policy_document" "p" {
  dynamic "statement" {
    for_each = [1]
    content {
      actions   = ["dynamodb:Scan"]
      resources = [aws_dynamodb_table.lease.arn]
    }
  }
}`, nil, []string{"dynamodb:Scan"}},
		{"a deny may be wide, an allow may not", `data "aws_iam_policy_document" "p" {
  statement {
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = ["*"]
  }
  statement {
    effect    = "Allow"
    actions   = ["s3:*"]
    resources = ["*"]
  }
}`, nil, []string{"wildcard s3:*"}},
		{"computed actions", `data "aws_iam_policy_document" "p" {
  statement {
    actions   = var.actions
    resources = ["*"]
  }
}`, nil, []string{"not a literal"}},
		{"policy bypassing documents", `resource "aws_iam_role_policy" "p" {
  role   = "r"
  policy = jsonencode({ Statement = [{ Action = "dynamodb:*", Resource = "*" }] })
}
resource "aws_iam_role_policy" "ok" {
  role   = "r"
  policy = data.aws_iam_policy_document.p.json
}`, nil, []string{"policy must be an aws_iam_policy_document"}},
		{"managed policy", `resource "aws_iam_role_policy_attachment" "a" {
  role       = "r"
  policy_arn = "arn:aws:iam::aws:policy/AmazonDynamoDBFullAccess"
}
resource "aws_iam_role_policy_attachment" "ok" {
  role       = "r"
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/AmazonSSMManagedInstanceCore"
}`, nil, []string{"AmazonDynamoDBFullAccess"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantProblems(t, checkPolicies(parse(t, "snippet.tf", tc.src), tc.allowed), tc.want...)
		})
	}
}

// TestGrantsPerDocumentCatch: the public-ID module's two documents are held each to its own
// actions, on the table references it may use and nothing else.
func TestGrantsPerDocumentCatch(t *testing.T) {
	const table = `resource "aws_dynamodb_table" "public_ids" { name = "idgen-public-ids" }
`
	spec := grants[publicIDDir]
	cases := []struct {
		name, src string
		want      []string
	}{
		{"good", table + `data "aws_iam_policy_document" "public_id" {
  statement {
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Scan"]
    resources = local.table_arns
  }
}
data "aws_iam_policy_document" "gateway" {
  statement {
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem"]
    resources = local.table_arns
  }
}`, nil},
		{"the gateway scans, the internal API deletes", table + `data "aws_iam_policy_document" "public_id" {
  statement {
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Scan", "dynamodb:DeleteItem"]
    resources = local.table_arns
  }
}
data "aws_iam_policy_document" "gateway" {
  statement {
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Scan"]
    resources = local.table_arns
  }
}`, []string{"grants dynamodb:DeleteItem", "grants dynamodb:Scan"}},
		{"an action missing, another reference, a third document", table + `data "aws_iam_policy_document" "public_id" {
  statement {
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem"]
    resources = local.table_arns
  }
}
data "aws_iam_policy_document" "gateway" {
  statement {
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem"]
    resources = local.all_tables
  }
}
data "aws_iam_policy_document" "other" {
  statement {
    actions   = ["dynamodb:GetItem"]
    resources = local.table_arns
  }
}`, []string{"dynamodb:Scan is granted on no table by aws_iam_policy_document.public_id", "local.all_tables", "aws_iam_policy_document.other statement: grants dynamodb:GetItem"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantProblems(t, checkGrants(parse(t, "snippet.tf", tc.src), spec), tc.want...)
		})
	}
}

// TestPublicIDTableARNs: in every evaluated root and example, the public-ID grants' table_arns
// are the idgen-public-ids table of exactly every region of the topology, in this account.
func TestPublicIDTableARNs(t *testing.T) {
	regions, err := topologyRegions(parseDir(t, topologyDir))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, root := range evaluated(t) {
		root.walk(func(in *instance) {
			if in.dir != filepath.Clean(publicIDDir) {
				return
			}
			seen++
			var got []string
			v := in.locals["table_arns"]
			if !v.IsWhollyKnown() || v.IsNull() {
				t.Errorf("%s: table_arns is not known at plan time", in.addr)
				return
			}
			for it := v.ElementIterator(); it.Next(); {
				_, e := it.Element()
				got = append(got, e.AsString())
			}
			var want []string
			for _, r := range sortedKeys(regions) {
				want = append(want, fmt.Sprintf("arn:%s.data.aws_partition.current.partition:dynamodb:%s:%s.data.aws_caller_identity.current.account_id:table/%s", in.addr, r, in.addr, publicIDTable))
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: table_arns %q, want %q", in.addr, got, want)
			}
		})
	}
	// Five region roots and the module's example.
	if want := len(regionRootDirs) + 1; seen != want {
		t.Errorf("%d public-ID instances evaluated, want %d", seen, want)
	}
}
