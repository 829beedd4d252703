// Package terraform holds the static checks of idgen's Terraform configuration (bootstrap/,
// live/ and modules/ beside this file). The AWS provider is not needed: the checks parse the HCL
// with hashicorp/hcl and hashicorp/terraform-config-inspect, read the provider's schema from the
// npm package @cdktf/provider-aws (infra/providerschema), evaluate the roots and examples from
// their literal inputs, and hold the configuration to the Go code it deploys.
//
// What they hold:
//   - every resource and data source type, argument, nested block and attribute reference exists
//     in the pinned provider's schema, and every required argument and block is present;
//   - the roots (from live/example.tfvars) and the examples evaluate as plan would; every fleet's
//     security group rules are unique as EC2 compares them, none is open to 0.0.0.0/0 or ::/0,
//     callers and health checks are admitted, and HTTPS goes out only to the VPC endpoints and
//     the peers;
//   - every module call passes only variables the called module declares, and all its required
//     ones; every module.X.Y reference names an output that X has;
//   - every DynamoDB table's name, keys, attribute types and TTL attribute equal the drivers'
//     constants (lease.TableV2, lease.TableHistory, lease.TableV1, region.RegistryTable and the key
//     constants of dynamolease and dynamostore; the state lock table Terraform's; the public-ID
//     table dynamomap's DefaultTable, KeyK and AttrTTL, with its table class); every table is on
//     demand, has point-in-time recovery, deletion protection, server-side encryption and
//     prevent_destroy, and none is a global table;
//   - every IAM policy statement that allows grants only its driver's actions
//     (dynamolease.GeneratorActions, dynamostore.Actions), and only on its own module's tables;
//     the public-ID programs' roles exactly their own actions (dynamomap.Actions for the internal
//     API, the same without Scan for the gateway), on the idgen-public-ids table of every region
//     of the topology;
//   - the public-ID fleets' boot scripts write the store file of the programs' shape and start
//     them with the flags, ports and Redis URLs the module's README states; the customer ALB, the
//     gateways and the Redis admit and send only what the customer path needs;
//   - every region of the topology has a peer in it and a root of its own in live/regions, all
//     alike, taking the region's number, peer, endpoint and failover callers from the topology;
//     no root depends_on another;
//   - the hosts' boot script configures chrony on the Amazon Time Sync Service and waits for sync
//     before it starts the service; rendered, it is valid bash within EC2's 16 KB, and its
//     certificate refresher replaces the files only when they changed and are valid;
//   - every alarm is named idgen-… and takes its threshold from deploy/alert-thresholds.json, and
//     every alarm of every live root notifies its root's alarm topic;
//   - every root's Prometheus workspace holds exactly the rules of dashboards/prometheus; every
//     host runs the collectors, scraping its service as job idgen-<service> with the region and
//     instance labels the rules use, writing to its own root's workspace, shipping its journal to
//     /idgen/<region>/<service>, with grants on exactly that workspace and log group.
//
// Each check is a function returning the problems it found, run on the real configuration
// (no problem expected) and on small broken snippets (the problem expected).
package terraform
