package terraform

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// The Transit Gateway paths between the regions, as the region roots make them from
// example.tfvars: every pair the failover path, the registry and the public-ID tables need is
// peered and routed each way, in the Transit Gateways' route tables and in every route table of
// the hosts' subnets.

// transitView is what one region root's module.transit makes, from its evaluated arguments.
type transitView struct {
	region   string
	in       *instance
	tgw      string                       // the Transit Gateway the VPC routes go to (local.transit_gateway_id)
	table    string                       // the module's Transit Gateway route table
	requests map[string]map[string]string // peer => peering attachment's arguments
	// attachments: per reference a route or association may name (a requested attachment's id,
	// an accepter's transit_gateway_attachment_id), the peer and the peering's ID.
	attachments map[string][2]string
	tgwRoutes   map[string]string            // destination => attachment reference
	tables      map[string]bool              // route tables (of the gateway) the routes are in
	vpcRoutes   map[string]map[string]string // VPC route table => destination => transit gateway
	associated  map[string]bool              // attachment references associated with the table
	vpcAttach   map[string]cty.Value         // the VPC attachment's arguments
	problems    []string
}

func str(v cty.Value) string {
	if v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
		return v.AsString()
	}
	return fmt.Sprintf("%#v", v)
}

func transitViewOf(region string, in *instance) *transitView {
	v := &transitView{region: region, in: in, requests: map[string]map[string]string{}, attachments: map[string][2]string{},
		tgwRoutes: map[string]string{}, tables: map[string]bool{}, vpcRoutes: map[string]map[string]string{}, associated: map[string]bool{}, vpcAttach: map[string]cty.Value{}}
	v.tgw = str(in.locals["transit_gateway_id"])
	insts := func(typ, name string) []objInstance {
		o, problems := objInstances(in, "resource", typ, name)
		v.problems = append(v.problems, problems...)
		return o
	}
	for _, t := range insts("aws_ec2_transit_gateway_route_table", "this") {
		v.table = str(t.self.GetAttr("id"))
	}
	peers := in.vars["peers"]
	for _, o := range insts("aws_ec2_transit_gateway_peering_attachment", "this") {
		p := o.extra["each"].GetAttr("key").AsString()
		v.requests[p] = map[string]string{}
		for _, a := range []string{"peer_region", "peer_transit_gateway_id", "transit_gateway_id"} {
			v.requests[p][a] = str(o.attr(in, a))
		}
		// The requester routes once its attachment's ID is given back (a precondition holds the
		// two equal in a real plan).
		v.attachments[str(o.self.GetAttr("id"))] = [2]string{p, str(peers.Index(cty.StringVal(p)).GetAttr("attachment_id"))}
	}
	// The accepter accepts the attachment it reads (and checks) first, the one it is given.
	given := map[string]string{}
	read, problems := objInstances(in, "data", "aws_ec2_transit_gateway_peering_attachment", "accepting")
	v.problems = append(v.problems, problems...)
	for _, o := range read {
		given[str(o.self.GetAttr("id"))] = str(o.attr(in, "id"))
	}
	for _, o := range insts("aws_ec2_transit_gateway_peering_attachment_accepter", "this") {
		p := o.extra["each"].GetAttr("key").AsString()
		id, ok := given[str(o.attr(in, "transit_gateway_attachment_id"))]
		if !ok {
			v.problems = append(v.problems, fmt.Sprintf("%s: %s accepts %s, not the attachment it reads", region, o.addr, str(o.attr(in, "transit_gateway_attachment_id"))))
		}
		v.attachments[str(o.self.GetAttr("transit_gateway_attachment_id"))] = [2]string{p, id}
	}
	for _, o := range insts("aws_ec2_transit_gateway_route", "peers") {
		dst := str(o.attr(in, "destination_cidr_block"))
		if _, dup := v.tgwRoutes[dst]; dup {
			v.problems = append(v.problems, fmt.Sprintf("%s: two Transit Gateway routes to %s", region, dst))
		}
		v.tgwRoutes[dst] = str(o.attr(in, "transit_gateway_attachment_id"))
		v.tables[str(o.attr(in, "transit_gateway_route_table_id"))] = true
	}
	for _, o := range insts("aws_route", "peers") {
		rt := str(o.attr(in, "route_table_id"))
		if v.vpcRoutes[rt] == nil {
			v.vpcRoutes[rt] = map[string]string{}
		}
		v.vpcRoutes[rt][str(o.attr(in, "destination_cidr_block"))] = str(o.attr(in, "transit_gateway_id"))
	}
	for _, o := range insts("aws_ec2_transit_gateway_route_table_association", "") {
		if str(o.attr(in, "transit_gateway_route_table_id")) == v.table {
			v.associated[str(o.attr(in, "transit_gateway_attachment_id"))] = true
		}
	}
	for _, o := range insts("aws_ec2_transit_gateway_route_table_propagation", "vpc") {
		if str(o.attr(in, "transit_gateway_route_table_id")) == v.table {
			v.associated["propagated "+str(o.attr(in, "transit_gateway_attachment_id"))] = true
		}
	}
	for _, o := range insts("aws_ec2_transit_gateway_vpc_attachment", "this") {
		for _, a := range []string{"transit_gateway_id", "vpc_id", "subnet_ids"} {
			v.vpcAttach[a] = o.attr(in, a)
		}
		v.vpcAttach["id"] = o.self.GetAttr("id")
	}
	return v
}

// regionNet is one region's networks entry.
type regionNet struct {
	vpcID, vpcCIDR string
	subnets, rtbs  []string
	callers        []string
}

func netsOf(tfvars map[string]cty.Value) map[string]regionNet {
	out := map[string]regionNet{}
	list := func(v cty.Value) []string {
		var ss []string
		for _, e := range v.AsValueSlice() {
			ss = append(ss, e.AsString())
		}
		return ss
	}
	for r, n := range tfvars["networks"].AsValueMap() {
		out[r] = regionNet{n.GetAttr("vpc_id").AsString(), n.GetAttr("vpc_cidr").AsString(), list(n.GetAttr("subnet_ids")),
			list(n.GetAttr("route_table_ids")), list(n.GetAttr("caller_cidrs"))}
	}
	return out
}

// inside reports whether CIDR c is within CIDR n.
func inside(c, n string) bool {
	cp, err1 := netip.ParsePrefix(c)
	np, err2 := netip.ParsePrefix(n)
	return err1 == nil && err2 == nil && cp.Bits() >= np.Bits() && np.Masked().Contains(cp.Addr())
}

func canonical(c string) string { return netip.MustParsePrefix(c).Masked().String() }

// destinations are what from must route to to: to's VPC, and its callers' networks outside both
// VPCs (the failover path back to callers in networks of their own).
func destinations(nets map[string]regionNet, from, to string) []string {
	out := []string{canonical(nets[to].vpcCIDR)}
	for _, c := range nets[to].callers {
		if !inside(c, nets[to].vpcCIDR) && !inside(c, nets[from].vpcCIDR) && !slices.Contains(out, canonical(c)) {
			out = append(out, canonical(c))
		}
	}
	return out
}

// transitPair is an ordered pair of regions whose traffic the Transit Gateways carry, and why.
type transitPair struct{ from, to, why string }

// neededPairs are the pairs the topology's traffic needs, from the topology module's regions
// alone: each failover pair both ways (the callers' requests there, the answers back), every
// region with the home region (the registry), and every region with every other (the public-ID
// programs read and write each region's table).
func neededPairs(t *testing.T) []transitPair {
	t.Helper()
	peers, err := topologyRegions(parseDir(t, topologyDir))
	if err != nil {
		t.Fatal(err)
	}
	home := literalString(parseDir(t, topologyDir).blocks("variable", "home_region")[0], "default")
	var out []transitPair
	for _, r := range sortedKeys(peers) {
		out = append(out, transitPair{r, peers[r], "failover"}, transitPair{peers[r], r, "failover"})
		if r != home {
			out = append(out, transitPair{r, home, "registry"}, transitPair{home, r, "registry"})
		}
		for _, o := range sortedKeys(peers) {
			if o != r {
				out = append(out, transitPair{r, o, "public-id"})
			}
		}
	}
	return out
}

// checkTransit: for every pair, from's gateway routes each of to's destinations to the peering
// of the two (the same attachment both sides name, example.tfvars' ID, requested by the lower
// number of the pair of to's gateway and accepted by the other), associated with from's route
// table, and every route table of from's hosts' subnets routes them to from's gateway; from's VPC
// is attached in its hosts' subnets and propagated.
func checkTransit(views map[string]*transitView, nets map[string]regionNet, numbers map[string]int, tfvars map[string]cty.Value, pairs []transitPair) []string {
	var problems []string
	tgws := tfvars["transit_gateways"].AsValueMap()
	for _, r := range sortedKeys(views) {
		v := views[r]
		problems = append(problems, v.problems...)
		if got := str(v.vpcAttach["vpc_id"]); got != nets[r].vpcID {
			problems = append(problems, fmt.Sprintf("%s: the VPC attachment is of %s, not %s", r, got, nets[r].vpcID))
		}
		if sub := v.vpcAttach["subnet_ids"]; sub == cty.NilVal || !sub.RawEquals(strs(nets[r].subnets...)) {
			problems = append(problems, fmt.Sprintf("%s: the VPC attachment is in %#v, not the hosts' subnets %q", r, sub, nets[r].subnets))
		}
		if id := str(v.vpcAttach["id"]); !v.associated[id] || !v.associated["propagated "+id] {
			problems = append(problems, fmt.Sprintf("%s: the VPC attachment is not associated with and propagated into the route table", r))
		}
	}
	seen := map[string]bool{}
	for _, p := range pairs {
		if seen[p.from+" "+p.to] {
			continue
		}
		seen[p.from+" "+p.to] = true
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("%s to %s (%s): ", p.from, p.to, p.why)+fmt.Sprintf(format, args...))
		}
		v := views[p.from]
		if v == nil {
			bad("no region root")
			continue
		}
		lo, hi := p.from, p.to
		if numbers[hi] < numbers[lo] {
			lo, hi = hi, lo
		}
		wantID := ""
		if id, ok := tfvars["transit_peering_attachments"].AsValueMap()[lo+":"+hi]; ok && !id.IsNull() {
			wantID = id.AsString()
		}
		if lo == p.from {
			req := v.requests[p.to]
			switch {
			case req == nil:
				bad("no peering attachment requested")
			case req["peer_region"] != p.to || req["peer_transit_gateway_id"] != str(tgws[p.to]) || req["transit_gateway_id"] != v.tgw:
				bad("the peering attachment is %v, want of %s to %s's %s", req, v.tgw, p.to, str(tgws[p.to]))
			}
		}
		for _, dst := range destinations(nets, p.from, p.to) {
			if ref, ok := v.tgwRoutes[dst]; !ok {
				bad("no Transit Gateway route to %s", dst)
			} else {
				if a := v.attachments[ref]; a[0] != p.to || a[1] != wantID || wantID == "" {
					bad("the Transit Gateway route to %s is to %s (peer %q, peering %q), want the peering %s:%s %q", dst, ref, a[0], a[1], lo, hi, wantID)
				}
				if !v.associated[ref] {
					bad("the peering attachment %s is not associated with the route table", ref)
				}
			}
			for _, rt := range nets[p.from].rtbs {
				if got, ok := v.vpcRoutes[rt][dst]; !ok {
					bad("route table %s has no route to %s", rt, dst)
				} else if got != v.tgw {
					bad("route table %s routes %s to %s, not the Transit Gateway %s", rt, dst, got, v.tgw)
				}
			}
		}
		if len(v.tables) != 1 || !v.tables[v.table] {
			bad("the Transit Gateway routes are in %v, not the module's route table %s", sortedKeys(v.tables), v.table)
		}
	}
	return problems
}

// transitViews evaluates every region root from tfvars (with override) and returns each one's
// module.transit.
func transitViews(t *testing.T, tfvars, override map[string]cty.Value) map[string]*transitView {
	t.Helper()
	views := map[string]*transitView{}
	for _, dir := range regionRootDirs {
		root := evalRoot(t, dir, tfvars, override)
		root.walk(func(in *instance) {
			for _, p := range in.problems {
				t.Errorf("problem: %s", p)
			}
		})
		in := childOf(root, "transit")
		if in == nil {
			t.Fatalf("%s: no module transit", dir)
		}
		views[filepath.Base(dir)] = transitViewOf(filepath.Base(dir), in)
	}
	return views
}

// TestTransitRoutes: from example.tfvars, every pair of regions the failover path, the registry
// and the public-ID tables need is routed each way; and the topology's transit_peers names them
// all with their reasons.
func TestTransitRoutes(t *testing.T) {
	tfvars, err := readTfvars(exampleTfvars)
	if err != nil {
		t.Fatal(err)
	}
	pairs := neededPairs(t)
	views := transitViews(t, tfvars, nil)
	wantProblems(t, checkTransit(views, netsOf(tfvars), topologyNumbers(t), tfvars, pairs))
	routes := 0
	for _, v := range views {
		routes += len(v.tgwRoutes)
	}
	// Five regions, each with four peers; us-east-1's callers' 10.100.0.0/16 besides its VPC.
	if want := 5*4 + 4; routes != want {
		t.Errorf("%d Transit Gateway routes, want %d", routes, want)
	}

	// The topology's transit_peers: every needed pair, with its reason, and exactly one side
	// requesting.
	var root *instance
	for _, r := range evaluated(t) {
		if r.dir == filepath.Clean(regionRootDirs[0]) {
			root = r
		}
	}
	tp := root.modules["topology"].GetAttr("transit_peers")
	for _, p := range pairs {
		e := tp.GetAttr(p.from).GetAttr(p.to)
		var reasons []string
		for _, r := range e.GetAttr("reasons").AsValueSlice() {
			reasons = append(reasons, r.AsString())
		}
		if !slices.Contains(reasons, p.why) {
			t.Errorf("transit_peers[%q][%q] gives %q, not %s", p.from, p.to, reasons, p.why)
		}
		if e.GetAttr("request").True() == tp.GetAttr(p.to).GetAttr(p.from).GetAttr("request").True() {
			t.Errorf("transit_peers: %s and %s both request or both accept", p.from, p.to)
		}
	}
}

// TestTransitRoutesCatch: a peering whose attachment is not given yet is routed by neither side
// (each way reported); a route a region root lacks, one to the wrong attachment and one in the
// wrong VPC route table are each found.
func TestTransitRoutesCatch(t *testing.T) {
	tfvars, err := readTfvars(exampleTfvars)
	if err != nil {
		t.Fatal(err)
	}
	nets, numbers, pairs := netsOf(tfvars), topologyNumbers(t), neededPairs(t)

	t.Run("a peering not given", func(t *testing.T) {
		m := tfvars["transit_peering_attachments"].AsValueMap()
		delete(m, "us-east-1:eu-west-1")
		views := transitViews(t, tfvars, map[string]cty.Value{"transit_peering_attachments": cty.MapVal(m)})
		tv := map[string]cty.Value{}
		for k, v := range tfvars {
			tv[k] = v
		}
		tv["transit_peering_attachments"] = cty.MapVal(m)
		problems := checkTransit(views, nets, numbers, tv, pairs)
		// eu-west-1 fails over to us-east-1: its requests there and the answers back, and us-east-1's
		// callers' 10.100.0.0/16 from eu-west-1 (six VPC routes and three gateway routes gone).
		wantProblems(t, problems,
			"eu-west-1 to us-east-1 (failover): no Transit Gateway route to 10.0.0.0/16",
			"eu-west-1 to us-east-1 (failover): route table rtb-0e3000000000000a1 has no route to 10.0.0.0/16",
			"eu-west-1 to us-east-1 (failover): no Transit Gateway route to 10.100.0.0/16",
			"eu-west-1 to us-east-1 (failover): route table rtb-0e3000000000000a1 has no route to 10.100.0.0/16",
			"us-east-1 to eu-west-1 (failover): no Transit Gateway route to 10.2.0.0/16",
			"us-east-1 to eu-west-1 (failover): route table rtb-0e1000000000000a1 has no route to 10.2.0.0/16",
			"us-east-1 to eu-west-1 (failover): route table rtb-0e1000000000000a2 has no route to 10.2.0.0/16",
			"us-east-1 to eu-west-1 (failover): route table rtb-0e1000000000000a3 has no route to 10.2.0.0/16",
		)
	})

	views := transitViews(t, tfvars, nil)
	t.Run("a VPC route missing", func(t *testing.T) {
		delete(views["ap-southeast-1"].vpcRoutes["rtb-0e5000000000000a2"], "10.3.0.0/16")
		wantProblems(t, checkTransit(views, nets, numbers, tfvars, pairs),
			"ap-southeast-1 to ap-northeast-1 (failover): route table rtb-0e5000000000000a2 has no route to 10.3.0.0/16")
	})
	views = transitViews(t, tfvars, nil)
	t.Run("a gateway route to the wrong peering", func(t *testing.T) {
		views["us-west-2"].tgwRoutes["10.4.0.0/16"] = views["us-west-2"].tgwRoutes["10.3.0.0/16"]
		wantProblems(t, checkTransit(views, nets, numbers, tfvars, pairs),
			"us-west-2 to ap-southeast-1 (public-id): the Transit Gateway route to 10.4.0.0/16 is to")
	})
	views = transitViews(t, tfvars, nil)
	t.Run("a gateway route missing", func(t *testing.T) {
		delete(views["us-west-2"].tgwRoutes, "10.100.0.0/16")
		wantProblems(t, checkTransit(views, nets, numbers, tfvars, pairs),
			"us-west-2 to us-east-1 (failover): no Transit Gateway route to 10.100.0.0/16")
	})
}

// transitExample evaluates modules/transit's example with AWS's answers for its resources.
func transitExample(t *testing.T, answers map[string]map[string]map[string]cty.Value, inputs map[string]cty.Value) []string {
	t.Helper()
	dir := transitDir + "/examples/basic"
	given := map[string]func(cty.Value) cty.Value{}
	for k, m := range answers {
		given[dir+".module.transit."+k] = withEachAttrs(m)
	}
	given[dir+".module.transit.data.aws_region.current"] = withAttrs(map[string]cty.Value{"name": cty.StringVal("eu-west-1")})
	in, err := evalModuleGiven(dir, dir, inputs, awsSchema(t), given)
	if err != nil {
		t.Fatal(err)
	}
	tr := childOf(in, "transit")
	if tr == nil {
		t.Fatal("no module transit")
	}
	for _, p := range tr.problems {
		t.Errorf("problem: %s", p)
	}
	var conds []condition
	for _, typ := range []string{"aws_ec2_transit_gateway", "aws_ec2_transit_gateway_route_table", "aws_ec2_transit_gateway_route_table_association"} {
		c, problems := conditionsOf(tr, "resource", typ, "")
		for _, p := range problems {
			t.Error(p)
		}
		conds = append(conds, c...)
	}
	c, problems := conditionsOf(tr, "data", "aws_ec2_transit_gateway_peering_attachment", "accepting")
	for _, p := range problems {
		t.Error(p)
	}
	conds = append(conds, c...)
	messages, unknown := failed(conds)
	for _, u := range unknown {
		t.Errorf("not evaluated: %s", u)
	}
	return messages
}

// TestTransitConditions: the accepter's check of the attachment it is given (at plan time, on
// the data source) fails on one that is not the peer's to this gateway, or is rejected; the requester's preconditions on an attachment ID that is not its own
// and on one not accepted yet; the route table's on a destination named for two peers, naming
// each; and all hold on AWS's answers for the example.
func TestTransitConditions(t *testing.T) {
	const (
		tgw      = "module.transit.aws_ec2_transit_gateway.this[0].id"
		accepted = "tgw-attach-0e1000000000e3001"
		request  = "tgw-attach-0e3000000000e4001"
	)
	good := func() map[string]map[string]map[string]cty.Value {
		return map[string]map[string]map[string]cty.Value{
			"data.aws_ec2_transit_gateway_peering_attachment.accepting": {"us-east-1": {
				"peer_region": cty.StringVal("us-east-1"), "transit_gateway_id": cty.StringVal("examples/basic." + tgw),
				"peer_transit_gateway_id": cty.StringVal("tgw-0e100000000000001"), "id": cty.StringVal(accepted), "state": cty.StringVal("pendingAcceptance"),
			}},
			"aws_ec2_transit_gateway_peering_attachment.this": {"ap-northeast-1": {
				"id": cty.StringVal(request), "state": cty.StringVal("available"),
			}},
		}
	}
	// The placeholder of the created gateway's ID, which the accepter's answer must name.
	fix := func(a map[string]map[string]map[string]cty.Value) map[string]map[string]map[string]cty.Value {
		a["data.aws_ec2_transit_gateway_peering_attachment.accepting"]["us-east-1"]["transit_gateway_id"] = cty.StringVal(transitDir + "/examples/basic." + tgw)
		return a
	}
	for _, tc := range []struct {
		name   string
		change func(a map[string]map[string]map[string]cty.Value)
		inputs map[string]cty.Value
		want   [][]string
	}{
		{"as AWS answers", func(map[string]map[string]map[string]cty.Value) {}, nil, nil},
		{"an attachment from another region", func(a map[string]map[string]map[string]cty.Value) {
			a["data.aws_ec2_transit_gateway_peering_attachment.accepting"]["us-east-1"]["peer_region"] = cty.StringVal("us-west-2")
		}, nil, [][]string{{"the peering attachment " + accepted + " given for us-east-1 joins us-west-2's", "not us-east-1's to this region's"}}},
		{"an attachment to another gateway", func(a map[string]map[string]map[string]cty.Value) {
			a["data.aws_ec2_transit_gateway_peering_attachment.accepting"]["us-east-1"]["transit_gateway_id"] = cty.StringVal("tgw-0ff")
		}, nil, [][]string{{"given for us-east-1 joins us-east-1's tgw-0e100000000000001 to tgw-0ff"}}},
		{"an attachment rejected", func(a map[string]map[string]map[string]cty.Value) {
			a["data.aws_ec2_transit_gateway_peering_attachment.accepting"]["us-east-1"]["state"] = cty.StringVal("rejected")
		}, nil, [][]string{{"the peering attachment " + accepted + " of us-east-1 with eu-west-1 is rejected: it cannot be accepted"}}},
		{"an attachment accepted already", func(a map[string]map[string]map[string]cty.Value) {
			a["data.aws_ec2_transit_gateway_peering_attachment.accepting"]["us-east-1"]["state"] = cty.StringVal("available")
		}, nil, nil},
		{"not accepted yet", func(a map[string]map[string]map[string]cty.Value) {
			a["aws_ec2_transit_gateway_peering_attachment.this"]["ap-northeast-1"]["state"] = cty.StringVal("pendingAcceptance")
		}, nil, [][]string{{"the peering attachment of eu-west-1 with ap-northeast-1 is pendingAcceptance, not available: apply ap-northeast-1's root"}}},
		{"another attachment's ID recorded", func(a map[string]map[string]map[string]cty.Value) {
			a["aws_ec2_transit_gateway_peering_attachment.this"]["ap-northeast-1"]["id"] = cty.StringVal("tgw-attach-0aaa")
		}, nil, [][]string{{"transit_peering_attachments gives " + request + " for the peering of eu-west-1 with ap-northeast-1, but this root's attachment to ap-northeast-1 is tgw-attach-0aaa"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := fix(good())
			tc.change(a)
			wantMessages(t, transitExample(t, a, tc.inputs), tc.want...)
		})
	}
}

// TestTransitAmbiguous: two peers naming one network (or a peer naming this VPC's) fails the
// plan, naming the network and the peers.
func TestTransitAmbiguous(t *testing.T) {
	peer := func(cidr string, callers ...string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{
			"vpc_cidr": cty.StringVal(cidr), "caller_cidrs": strs(callers...), "request": cty.True,
			"transit_gateway_id": cty.StringVal("tgw-0e1"), "attachment_id": cty.StringVal("tgw-attach-0e1"),
		})
	}
	base := map[string]cty.Value{
		"name": cty.StringVal("idgen-eu-west-1"), "region": cty.StringVal("eu-west-1"),
		"vpc_id": cty.StringVal(netVPC), "vpc_cidr": cty.StringVal("10.2.0.0/16"),
		"subnet_ids": strs(netSubnets...), "route_table_ids": strs("rtb-0e3000000000000a1"),
	}
	for _, tc := range []struct {
		name  string
		peers map[string]cty.Value
		want  []string
	}{
		{"apart", map[string]cty.Value{"us-east-1": peer("10.0.0.0/16", "10.0.0.0/16", "10.100.0.0/16"), "us-west-2": peer("10.1.0.0/16", "10.2.5.0/24")}, nil},
		{"a callers' network in two peers", map[string]cty.Value{"us-east-1": peer("10.0.0.0/16", "10.100.0.0/16"), "us-west-2": peer("10.1.0.0/16", "10.100.0.1/16")},
			[]string{"routed to more than one place: 10.100.0.0/16 (us-east-1, us-west-2)"}},
		{"a peer's VPC as another's callers", map[string]cty.Value{"us-east-1": peer("10.0.0.0/16"), "us-west-2": peer("10.1.0.0/16", "10.0.0.0/16")},
			[]string{"10.0.0.0/16 (us-east-1, us-west-2)"}},
		{"this VPC as a peer's", map[string]cty.Value{"us-east-1": peer("10.2.0.0/16")},
			[]string{"10.2.0.0/16 (this VPC, us-east-1)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inputs := map[string]cty.Value{}
			for k, v := range base {
				inputs[k] = v
			}
			inputs["peers"] = cty.MapVal(tc.peers)
			in, err := evalModule(transitDir, "module.transit", inputs, awsSchema(t))
			if err != nil {
				t.Fatal(err)
			}
			conds, _ := conditionsOf(in, "resource", "aws_ec2_transit_gateway_route_table", "this")
			messages, unknown := failed(conds)
			for _, u := range unknown {
				t.Errorf("not evaluated: %s", u)
			}
			if tc.want == nil {
				wantMessages(t, messages)
				return
			}
			wantMessages(t, messages, tc.want)
		})
	}
}

// TestZoneAssociations: the registry root associates the private zone with every region's VPC
// (the home VPC as the zone's own, the others by aws_route53_zone_association) and each callers'
// VPC of caller_vpcs once, in its region; a callers' VPC that is a region's is not associated
// twice.
func TestZoneAssociations(t *testing.T) {
	tfvars, err := readTfvars(exampleTfvars)
	if err != nil {
		t.Fatal(err)
	}
	nets := netsOf(tfvars)
	for _, tc := range []struct {
		name    string
		callers cty.Value
		want    map[string]string // VPC => region, besides the networks'
	}{
		{"example.tfvars", tfvars["caller_vpcs"], map[string]string{"vpc-0e1000000000000c0": "us-east-1"}},
		{"a region's VPC and a repeat among the callers", cty.MapVal(map[string]cty.Value{
			"us-east-1":    strs("vpc-0e1000000000000c0", "vpc-0e1000000000000c0", nets["us-west-2"].vpcID),
			"eu-central-1": strs("vpc-0ec000000000000c0"),
		}), map[string]string{"vpc-0e1000000000000c0": "us-east-1", "vpc-0ec000000000000c0": "eu-central-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := evalRoot(t, registryRootDir, tfvars, map[string]cty.Value{"caller_vpcs": tc.callers})
			for _, p := range root.problems {
				t.Errorf("problem: %s", p)
			}
			got := map[string]string{}
			var lines []string
			for _, name := range []string{"networks", "callers"} {
				insts, problems := objInstances(root, "resource", "aws_route53_zone_association", name)
				for _, p := range problems {
					t.Error(p)
				}
				for _, o := range insts {
					vpc, region := str(o.attr(root, "vpc_id")), str(o.attr(root, "vpc_region"))
					if z := str(o.attr(root, "zone_id")); !strings.HasSuffix(z, "aws_route53_zone.this.zone_id") {
						t.Errorf("%s: zone %s", o.addr, z)
					}
					if _, dup := got[vpc]; dup {
						t.Errorf("%s associated twice", vpc)
					}
					got[vpc] = region
					lines = append(lines, o.addr)
				}
			}
			want := map[string]string{}
			for r, n := range nets {
				if r != "us-east-1" {
					want[n.vpcID] = r
				}
			}
			for k, v := range tc.want {
				want[k] = v
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("associations %v, want %v", got, want)
			}
			sort.Strings(lines)
			t.Log(strings.Join(lines, "\n"))
			// The zone's own VPC is the home VPC, and only it.
			zone := root.cfg.blocks("resource", "aws_route53_zone")[0]
			var own []string
			for _, b := range zone.Body.Blocks {
				if b.Type == "vpc" {
					own = append(own, str(root.value(b.Body.Attributes["vpc_id"].Expr, nil, "")))
				}
				if b.Type == "dynamic" {
					t.Errorf("the zone has a dynamic %s block: its VPCs besides the home VPC are associations", b.Labels[0])
				}
			}
			if !slices.Equal(own, []string{nets["us-east-1"].vpcID}) {
				t.Errorf("the zone's own VPCs are %q, want the home VPC's alone", own)
			}
		})
	}
}

// outputPreconditions evaluates the preconditions of output name and returns the messages of
// those that fail; one that cannot be evaluated is an error.
func outputPreconditions(t *testing.T, in *instance, name string) []string {
	t.Helper()
	var failed []string
	for _, b := range in.cfg.blocks("output", name) {
		for _, pc := range b.Body.Blocks {
			if pc.Type != "precondition" {
				continue
			}
			cond := in.value(pc.Body.Attributes["condition"].Expr, nil, "")
			if !cond.IsKnown() || cond.IsNull() || cond.Type() != cty.Bool {
				t.Errorf("output %s: a precondition is not known: %#v", name, cond)
				continue
			}
			if cond.False() {
				failed = append(failed, str(in.value(pc.Body.Attributes["error_message"].Expr, nil, "")))
			}
		}
	}
	return failed
}

// TestTransitPeeringKeys: a region root's plan stops on a key of transit_peering_attachments that
// names no peering of the topology (the accepter first, or not a pair), naming it, and goes on
// with example.tfvars'.
func TestTransitPeeringKeys(t *testing.T) {
	tfvars, err := readTfvars(exampleTfvars)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(regionRootsDir, "ap-northeast-1")
	for _, tc := range []struct {
		name  string
		extra map[string]string
		want  [][]string
	}{
		{"example.tfvars", nil, nil},
		{"the accepter first", map[string]string{"eu-west-1:us-east-1": "tgw-attach-0e1000000000e3001"},
			[][]string{{"transit_peering_attachments names no peering of the topology: eu-west-1:us-east-1 (keys are <requester>:<accepter>"}}},
		{"not a region", map[string]string{"us-east-1:mars-1": "tgw-attach-0aa", "us-east-1:us-east-1": "tgw-attach-0bb"},
			[][]string{{"names no peering of the topology: us-east-1:mars-1, us-east-1:us-east-1 ("}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tfvars["transit_peering_attachments"].AsValueMap()
			for k, v := range tc.extra {
				m[k] = cty.StringVal(v)
			}
			root := evalRoot(t, dir, tfvars, map[string]cty.Value{"transit_peering_attachments": cty.MapVal(m)})
			wantMessages(t, outputPreconditions(t, root, "transit_peering_attachments"), tc.want...)
		})
	}
}
