# The topology with the five regions of the default and a sixth one added, as step 2 of adding a
# region does: it needs no provider, so it plans anywhere Terraform runs.

terraform {
  required_version = ">= 1.5.0"
}

module "topology" {
  source = "../.."

  regions = {
    "us-east-1"      = { number = 0, peer = "us-west-2" }
    "us-west-2"      = { number = 1, peer = "us-east-1" }
    "eu-west-1"      = { number = 2, peer = "us-east-1" }
    "ap-northeast-1" = { number = 3, peer = "ap-southeast-1" }
    "ap-southeast-1" = { number = 4, peer = "ap-northeast-1" }
    "sa-east-1"      = { number = 5, peer = "us-east-1" }
  }
  endpoint_domain = "idgen.example.internal"
}

output "client_config" {
  description = "Per region, the endpoints its callers use in order."
  value       = module.topology.client_config
}

output "failover_sources" {
  description = "Per region, the regions whose callers fail over to it (us-east-1: eu-west-1, sa-east-1 and us-west-2)."
  value       = module.topology.failover_sources
}

output "transit_peers" {
  description = "Per region, the regions it peers with over the Transit Gateway and why (sa-east-1 with us-east-1: failover, registry, public-id; requested by us-east-1, the lower number)."
  value       = module.topology.transit_peers
}
