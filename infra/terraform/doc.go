// Package terraform holds the static checks of idgen's Terraform configuration (modules/ and
// live/ beside this file). The AWS provider is not needed: the checks parse the HCL with
// hashicorp/hcl and hashicorp/terraform-config-inspect and hold it to the Go code it deploys.
//
// What they hold:
//   - every module call passes only variables the called module declares, and all its required
//     ones; every module.X.Y reference names an output that X has;
//   - every DynamoDB table's name, keys, attribute types and TTL attribute equal the drivers'
//     constants (lease.TableV2, lease.TableHistory, lease.TableV1, store.TableName and the key
//     constants of dynamolease and dynamostore); every table has point-in-time recovery, deletion
//     protection, server-side encryption and prevent_destroy, and none is a global table;
//   - every IAM policy statement grants only its driver's actions (dynamolease.GeneratorActions,
//     dynamostore.Actions), and only on its own module's tables;
//   - every region of the topology has a peer in it, and live/ takes every region's number,
//     peer and endpoint from the topology module;
//   - the hosts' boot script configures chrony on the Amazon Time Sync Service and waits for sync
//     before it starts the service;
//   - every alarm is named idgen-… and takes its threshold from deploy/alert-thresholds.json.
//
// Each check is a function returning the problems it found, run on the real configuration
// (no problem expected) and on small broken snippets (the problem expected).
package terraform
