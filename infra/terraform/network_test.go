package terraform

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// The network idgen needs, as the modules check it at plan time: each data source's
// postconditions evaluated on results given as AWS would answer them, failing with their message
// on a network that lacks something and holding on one that has it.

// awsAnswers are stand-ins for AWS's answers to a module's data sources: per data source address
// within the module ("data.aws_vpc.this"), either attributes of the one object, or per for_each
// key the attributes of that instance.
type awsAnswers struct {
	one  map[string]map[string]cty.Value
	each map[string]map[string]map[string]cty.Value
}

func (a awsAnswers) given(addr string) map[string]func(cty.Value) cty.Value {
	g := map[string]func(cty.Value) cty.Value{}
	for k, attrs := range a.one {
		g[addr+"."+k] = withAttrs(attrs)
	}
	for k, m := range a.each {
		g[addr+"."+k] = withEachAttrs(m)
	}
	return g
}

// dataConditions evaluates the module in dir with the answers and returns the messages of its
// data sources' failing conditions; a condition that cannot be evaluated is an error.
func dataConditions(t *testing.T, dir string, inputs map[string]cty.Value, answers awsAnswers) []string {
	t.Helper()
	addr := "module.x"
	in, err := evalModuleGiven(dir, addr, inputs, awsSchema(t), answers.given(addr))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range in.problems {
		t.Errorf("problem: %s", p)
	}
	conds, problems := conditionsOf(in, "data", "", "")
	for _, p := range problems {
		t.Error(p)
	}
	if len(conds) == 0 {
		t.Fatal("no conditions evaluated")
	}
	messages, unknown := failed(conds)
	for _, u := range unknown {
		t.Errorf("not evaluated: %s", u)
	}
	return messages
}

// wantMessages: messages are exactly one per entry of want, each with all of its parts.
func wantMessages(t *testing.T, messages []string, want ...[]string) {
	t.Helper()
	for _, w := range want {
		if !mentions(messages, w...) {
			t.Errorf("no failing condition says all of %q; they say %q", w, messages)
		}
	}
	if len(messages) != len(want) {
		t.Errorf("%d conditions fail, want %d: %q", len(messages), len(want), messages)
	}
}

var (
	netVPC     = "vpc-0e3000000000000a0"
	netSubnets = []string{"subnet-0e3000000000000a1", "subnet-0e3000000000000a2", "subnet-0e3000000000000a3"}
	netPublic  = []string{"subnet-0e3000000000000b1", "subnet-0e3000000000000b2", "subnet-0e3000000000000b3"}
	netZones   = []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}
)

// endpointsAnswers is a VPC that has everything modules/endpoints needs: DNS support and
// hostnames on, its CIDR, its three subnets in three zones, every service offered in all three.
func endpointsAnswers(services []string) awsAnswers {
	a := awsAnswers{
		one: map[string]map[string]cty.Value{"data.aws_vpc.this": {
			"id": cty.StringVal(netVPC), "enable_dns_support": cty.True, "enable_dns_hostnames": cty.True,
			"cidr_block":              cty.StringVal("10.2.0.0/16"),
			"cidr_block_associations": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"cidr_block": cty.StringVal("10.2.0.0/16")})}),
		}},
		each: map[string]map[string]map[string]cty.Value{"data.aws_subnet.this": {}, "data.aws_vpc_endpoint_service.interface": {}},
	}
	for i, s := range netSubnets {
		a.each["data.aws_subnet.this"][s] = map[string]cty.Value{"vpc_id": cty.StringVal(netVPC), "availability_zone": cty.StringVal(netZones[i])}
	}
	for _, svc := range services {
		a.each["data.aws_vpc_endpoint_service.interface"][svc] = map[string]cty.Value{"availability_zones": strSet(netZones...)}
	}
	return a
}

// TestEndpointsNetworkChecks: modules/endpoints' plan stops on a VPC with DNS support or DNS
// hostnames off, of another CIDR, a subnet in another VPC, and an interface endpoint service not
// offered in a subnet's zone, each naming what is missing; and goes on with a network that has
// all of it.
func TestEndpointsNetworkChecks(t *testing.T) {
	inputs := map[string]cty.Value{
		"name": cty.StringVal("idgen-eu-west-1"), "region": cty.StringVal("eu-west-1"),
		"vpc_id": cty.StringVal(netVPC), "vpc_cidr": cty.StringVal("10.2.0.0/16"),
		"subnet_ids": strs(netSubnets...), "route_table_ids": strs("rtb-0e3000000000000a1"),
	}
	services := []string{"dynamodb", "ec2messages", "kms", "monitoring", "ssm", "ssmmessages", "sts"}
	for _, tc := range []struct {
		name   string
		change func(a awsAnswers)
		want   [][]string
	}{
		{"all there", func(awsAnswers) {}, nil},
		{"DNS hostnames off", func(a awsAnswers) { a.one["data.aws_vpc.this"]["enable_dns_hostnames"] = cty.False },
			[][]string{{"VPC " + netVPC + " in eu-west-1 has DNS hostnames off; private DNS of the interface endpoints needs it"}}},
		{"DNS support off", func(a awsAnswers) { a.one["data.aws_vpc.this"]["enable_dns_support"] = cty.False },
			[][]string{{"VPC " + netVPC + " in eu-west-1 has DNS support off", "enable_dns_support"}}},
		{"both off", func(a awsAnswers) {
			a.one["data.aws_vpc.this"]["enable_dns_support"] = cty.False
			a.one["data.aws_vpc.this"]["enable_dns_hostnames"] = cty.False
		}, [][]string{{"DNS support off"}, {"DNS hostnames off"}}},
		{"another CIDR", func(a awsAnswers) {
			a.one["data.aws_vpc.this"]["cidr_block"] = cty.StringVal("10.9.0.0/16")
			a.one["data.aws_vpc.this"]["cidr_block_associations"] = cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"cidr_block": cty.StringVal("10.9.0.0/16")})})
		}, [][]string{{"VPC " + netVPC + " in eu-west-1 has CIDR 10.9.0.0/16, not 10.2.0.0/16"}}},
		{"a secondary CIDR", func(a awsAnswers) {
			a.one["data.aws_vpc.this"]["cidr_block"] = cty.StringVal("10.9.0.0/16")
			a.one["data.aws_vpc.this"]["cidr_block_associations"] = cty.ListVal([]cty.Value{
				cty.ObjectVal(map[string]cty.Value{"cidr_block": cty.StringVal("10.9.0.0/16")}),
				cty.ObjectVal(map[string]cty.Value{"cidr_block": cty.StringVal("10.2.0.0/16")})})
		}, nil},
		{"a subnet in another VPC", func(a awsAnswers) {
			a.each["data.aws_subnet.this"][netSubnets[1]]["vpc_id"] = cty.StringVal("vpc-0ff")
		}, [][]string{{"subnet " + netSubnets[1] + " in eu-west-1 is in vpc-0ff, not in " + netVPC}}},
		{"ssm not in a zone", func(a awsAnswers) {
			a.each["data.aws_vpc_endpoint_service.interface"]["ssm"]["availability_zones"] = strSet("eu-west-1a", "eu-west-1b")
		}, [][]string{{"com.amazonaws.eu-west-1.ssm is not offered in eu-west-1c (subnets " + netSubnets[2] + ")", "offered in eu-west-1a, eu-west-1b"}}},
		{"DynamoDB's interface service not in two zones", func(a awsAnswers) {
			a.each["data.aws_vpc_endpoint_service.interface"]["dynamodb"]["availability_zones"] = strSet("eu-west-1b", "eu-west-1d")
		}, [][]string{{"com.amazonaws.eu-west-1.dynamodb is not offered in eu-west-1a, eu-west-1c (subnets " + netSubnets[0] + ", " + netSubnets[2] + ")"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := endpointsAnswers(services)
			tc.change(a)
			wantMessages(t, dataConditions(t, endpointsDir, inputs, a), tc.want...)
		})
	}
}

// networkAnswers is a region whose hosts' subnets are one per zone, each zone offering every
// instance type, and whose public subnets route 0.0.0.0/0 to an internet gateway.
func networkAnswers(types []string) awsAnswers {
	a := awsAnswers{
		one: map[string]map[string]cty.Value{
			"data.aws_availability_zones.this":          {"names": strs(append(slices.Clone(netZones), "eu-west-1d")...)},
			"data.aws_ec2_instance_type_offerings.this": {},
		},
		each: map[string]map[string]map[string]cty.Value{"data.aws_subnet.private": {}, "data.aws_subnet.public": {}, "data.aws_route_table.public": {}},
	}
	var locs, its []string
	for _, z := range append(slices.Clone(netZones), "eu-west-1d") {
		for _, ty := range types {
			locs, its = append(locs, z), append(its, ty)
		}
	}
	a.one["data.aws_ec2_instance_type_offerings.this"]["locations"] = strs(locs...)
	a.one["data.aws_ec2_instance_type_offerings.this"]["instance_types"] = strs(its...)
	for i, s := range netSubnets {
		a.each["data.aws_subnet.private"][s] = map[string]cty.Value{"vpc_id": cty.StringVal(netVPC), "availability_zone": cty.StringVal(netZones[i])}
	}
	for i, s := range netPublic {
		a.each["data.aws_subnet.public"][s] = map[string]cty.Value{"vpc_id": cty.StringVal(netVPC), "availability_zone": cty.StringVal(netZones[i])}
		a.each["data.aws_route_table.public"][s] = map[string]cty.Value{
			"route_table_id": cty.StringVal(fmt.Sprintf("rtb-0e30000000000b%d", i)),
			"routes":         routes(map[string]string{"10.2.0.0/16": "local", "0.0.0.0/0": "igw-0e3000000000000001"}),
		}
	}
	return a
}

// routes is a route table's routes (destination => target), as the data source answers: an
// internet gateway or "local" in gateway_id, a NAT gateway in nat_gateway_id.
func routes(m map[string]string) cty.Value {
	var vs []cty.Value
	for _, dst := range sortedKeys(m) {
		gw, nat := m[dst], ""
		if strings.HasPrefix(gw, "nat-") {
			gw, nat = "", gw
		}
		vs = append(vs, cty.ObjectVal(map[string]cty.Value{
			"cidr_block": cty.StringVal(dst), "gateway_id": cty.StringVal(gw),
			"nat_gateway_id": cty.StringVal(nat), "transit_gateway_id": cty.StringVal(""),
		}))
	}
	return cty.ListVal(vs)
}

// TestNetworkChecks: modules/network-checks' plan stops on a fleet instance type not offered in
// a subnet's zone, a public subnet without a route to an internet gateway, the public subnets in
// one zone, hosts' subnets that share a zone or are in another VPC, naming each; and goes on with
// a network that has all of it.
func TestNetworkChecks(t *testing.T) {
	types := []string{"c7g.large", "c7g.xlarge"}
	inputs := map[string]cty.Value{
		"region": cty.StringVal("eu-west-1"), "vpc_id": cty.StringVal(netVPC),
		"subnet_ids": strs(netSubnets...), "public_subnet_ids": strs(netPublic...), "instance_types": strs(types...),
	}
	for _, tc := range []struct {
		name   string
		change func(a awsAnswers)
		want   [][]string
	}{
		{"all there", func(awsAnswers) {}, nil},
		{"an instance type not offered in a zone", func(a awsAnswers) {
			// c7g.xlarge is not offered in eu-west-1c.
			o := a.one["data.aws_ec2_instance_type_offerings.this"]
			var locs, its []string
			for _, z := range []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"} {
				for _, ty := range types {
					if z != "eu-west-1c" || ty != "c7g.xlarge" {
						locs, its = append(locs, z), append(its, ty)
					}
				}
			}
			o["locations"], o["instance_types"] = strs(locs...), strs(its...)
		}, [][]string{{"not offered in the zones of the hosts' subnets in eu-west-1: c7g.xlarge in eu-west-1c (subnet " + netSubnets[2] + ")", "the fleets cannot launch there"}}},
		{"no instance type in a zone", func(a awsAnswers) {
			o := a.one["data.aws_ec2_instance_type_offerings.this"]
			o["locations"], o["instance_types"] = strs("eu-west-1b", "eu-west-1b", "eu-west-1c", "eu-west-1c"), strs(types[0], types[1], types[0], types[1])
		}, [][]string{{"c7g.large in eu-west-1a (subnet " + netSubnets[0] + "); c7g.xlarge in eu-west-1a (subnet " + netSubnets[0] + ")"}}},
		{"a public subnet routed to a NAT gateway", func(a awsAnswers) {
			a.each["data.aws_route_table.public"][netPublic[1]]["routes"] = routes(map[string]string{"10.2.0.0/16": "local", "0.0.0.0/0": "nat-0e3000000000000001"})
		}, [][]string{{"public subnet " + netPublic[1] + " in eu-west-1 (route table rtb-0e30000000000b1) has no route of 0.0.0.0/0 to an internet gateway"}}},
		{"a public subnet with no default route", func(a awsAnswers) {
			a.each["data.aws_route_table.public"][netPublic[0]]["routes"] = routes(map[string]string{"10.2.0.0/16": "local", "10.0.0.0/8": "igw-0e3000000000000001"})
		}, [][]string{{"public subnet " + netPublic[0] + " in eu-west-1 (route table rtb-0e30000000000b0) has no route of 0.0.0.0/0"}}},
		{"the public subnets in one zone", func(a awsAnswers) {
			for _, s := range netPublic {
				a.each["data.aws_subnet.public"][s]["availability_zone"] = cty.StringVal("eu-west-1a")
			}
		}, [][]string{{"the customer ALB's public subnets in eu-west-1 are in one zone", "an ALB needs subnets in two Availability Zones"}}},
		{"hosts' subnets sharing a zone", func(a awsAnswers) {
			a.each["data.aws_subnet.private"][netSubnets[2]]["availability_zone"] = cty.StringVal("eu-west-1b")
		}, [][]string{{"the hosts' subnets in eu-west-1 share zones", netSubnets[2] + " in eu-west-1b", "one subnet per Availability Zone"}}},
		{"a hosts' subnet in a zone not available", func(a awsAnswers) {
			a.one["data.aws_availability_zones.this"]["names"] = strs("eu-west-1a", "eu-west-1b")
		}, [][]string{{"zones that are not available: " + netSubnets[2] + " in eu-west-1c"}}},
		{"a public subnet in another VPC", func(a awsAnswers) {
			a.each["data.aws_subnet.public"][netPublic[2]]["vpc_id"] = cty.StringVal("vpc-0ff")
		}, [][]string{{"public subnet " + netPublic[2] + " in eu-west-1 is in vpc-0ff, not in the hosts' VPC " + netVPC}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := networkAnswers(types)
			a.one["data.aws_region.current"] = map[string]cty.Value{"name": cty.StringVal("eu-west-1")}
			tc.change(a)
			wantMessages(t, dataConditions(t, netCheckDir, inputs, a), tc.want...)
		})
	}
}

// TestRegionRootNetworkChecks: every region root checks its own network with modules/network-checks
// (its VPC, hosts' subnets and public subnets from networks) for the instance types its fleets
// launch, and checks that the customer hostname is a name of the public zone customer_zone.
func TestRegionRootNetworkChecks(t *testing.T) {
	tfvars, err := readTfvars(exampleTfvars)
	if err != nil {
		t.Fatal(err)
	}
	networks := tfvars["networks"].AsValueMap()
	for _, root := range evaluated(t) {
		if filepath.Dir(root.dir) != filepath.Clean(regionRootsDir) {
			continue
		}
		region := filepath.Base(root.dir)
		nc := childOf(root, "network_checks")
		if nc == nil {
			t.Errorf("%s: no module network_checks", root.addr)
			continue
		}
		n := networks[region]
		for _, arg := range []struct{ name, from string }{{"vpc_id", "vpc_id"}, {"subnet_ids", "subnet_ids"}, {"public_subnet_ids", "public_subnet_ids"}} {
			got, want := nc.vars[arg.name], n.GetAttr(arg.from)
			if arg.name != "vpc_id" {
				want = cty.ListVal(want.AsValueSlice())
			}
			if !got.RawEquals(want) {
				t.Errorf("%s: module network_checks %s is %#v, want networks[%q].%s %#v", root.addr, arg.name, got, region, arg.from, want)
			}
		}
		if r := nc.vars["region"]; r.AsString() != region {
			t.Errorf("%s: module network_checks region is %s", root.addr, r.AsString())
		}
		// The instance types checked are those of the fleets in the hosts' subnets.
		var fleetTypes []string
		root.walk(func(in *instance) {
			if in.dir == filepath.Clean(fleetDir) {
				if v := in.vars["instance_type"]; v.IsKnown() && !v.IsNull() && !slices.Contains(fleetTypes, v.AsString()) {
					fleetTypes = append(fleetTypes, v.AsString())
				}
			}
		})
		var checked []string
		for _, v := range nc.vars["instance_types"].AsValueSlice() {
			checked = append(checked, v.AsString())
		}
		slices.Sort(fleetTypes)
		slices.Sort(checked)
		if len(fleetTypes) == 0 || !slices.Equal(slices.Compact(checked), fleetTypes) {
			t.Errorf("%s: instance types checked %q, the fleets launch %q", root.addr, checked, fleetTypes)
		}
	}
}

// TestCustomerZoneCheck: a region root's plan stops when customer_zone is not the public zone of
// customer_hostname, naming both, and goes on when it is.
func TestCustomerZoneCheck(t *testing.T) {
	dir := filepath.Join(regionRootsDir, "eu-west-1")
	tfvars, err := readTfvars(exampleTfvars)
	if err != nil {
		t.Fatal(err)
	}
	m, err := loadModule(dir)
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]cty.Value{}
	for name := range m.Variables {
		if v, ok := tfvars[name]; ok {
			inputs[name] = v
		}
	}
	for _, tc := range []struct {
		name, zone, hostname string
		private              bool
		want                 [][]string
	}{
		{"the hostname in the zone", "example.com.", "api.example.com", false, nil},
		{"the hostname the zone's apex", "api.example.com", "api.example.com", false, nil},
		{"another zone", "example.org", "api.example.com", false, [][]string{{"customer_hostname api.example.com is not a name in the public zone example.org (Z0E3)"}}},
		{"a suffix that is not a parent", "ample.com", "api.example.com", false, [][]string{{"is not a name in the public zone ample.com"}}},
		{"a private zone", "example.com", "api.example.com", true, [][]string{{"is not a name in the public zone example.com"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := map[string]cty.Value{}
			for k, v := range inputs {
				in[k] = v
			}
			in["customer_hostname"] = cty.StringVal(tc.hostname)
			given := map[string]func(cty.Value) cty.Value{dir + ".data.aws_route53_zone.customer": withAttrs(map[string]cty.Value{
				"name": cty.StringVal(tc.zone), "zone_id": cty.StringVal("Z0E3"), "private_zone": cty.BoolVal(tc.private),
			})}
			root, err := evalModuleGiven(dir, dir, in, awsSchema(t), given)
			if err != nil {
				t.Fatal(err)
			}
			conds, problems := conditionsOf(root, "data", "aws_route53_zone", "customer")
			for _, p := range problems {
				t.Error(p)
			}
			messages, unknown := failed(conds)
			for _, u := range unknown {
				t.Errorf("not evaluated: %s", u)
			}
			if len(conds) == 0 {
				t.Fatal("no condition on the customer zone")
			}
			wantMessages(t, messages, tc.want...)
		})
	}
}
