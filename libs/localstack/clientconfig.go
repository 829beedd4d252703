package localstack

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/idgen/idgen/libs/topology"
)

// ClientConfigFile is the callers' client configuration file in the folder dir (a stack's State,
// the game day's results): dir/client_config.json, which idclient.ReadClientConfig reads.
func ClientConfigFile(dir string) string { return filepath.Join(dir, "client_config.json") }

// TopologyVars is the topology module's regions variable for the local stack: its two regions
// (DefaultGenerators) with the numbers the registry gives them, each the other's peer
// (us-east-1's production peer, us-west-2, does not run locally).
func TopologyVars() map[string]any {
	return map[string]any{"regions": map[string]any{
		"us-east-1": map[string]any{"number": 0, "peer": "eu-west-1"},
		"eu-west-1": map[string]any{"number": 2, "peer": "us-east-1"},
	}}
}

// PlanTopology plans the topology module of the repository at root
// (infra/terraform/modules/topology) with vars (nil: TopologyVars), the plan cached under
// .tools/topology so that only a changed module runs Terraform again.
func PlanTopology(ctx context.Context, root string, vars map[string]any) (*topology.Topology, error) {
	if vars == nil {
		vars = TopologyVars()
	}
	return topology.Plan(ctx, topology.Options{Module: filepath.Join(root, "infra", "terraform", "modules", "topology"), Vars: vars})
}

// WriteClientConfig writes the client configuration of the callers of a stack to path: the
// topology's client_config, each region's endpoint replaced by addrs[region], the URL the
// region's callers reach its generators at (its first generator, RegionAddrs, or its load
// balancer). The order and the peers stay the plan's. It is the one writer of a local client
// config: make run, the tests and the game day hand their callers no generator address any
// other way.
func WriteClientConfig(path string, tp *topology.Topology, addrs map[string]string) error {
	cc, err := tp.Localize(addrs)
	if err != nil {
		return err
	}
	if err := cc.WriteFile(path); err != nil {
		return fmt.Errorf("localstack: the callers' client config: %w", err)
	}
	return nil
}

// MakeRunGenerators returns the URL of make run's generators (DefaultGenerators on
// FixedPorts), by region: the generators an operator's idgenctl reaches by default.
func MakeRunGenerators() map[string]string {
	out := map[string]string{}
	for i, g := range DefaultGenerators {
		out[g.Region] = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(GeneratorPort+i))
	}
	return out
}
