output "client_config" {
  description = "Per region, the endpoints its callers use in order: the region's own, then its peer's (only while the region's own fleet is down). Generated from the topology."
  value       = module.topology.client_config
}

output "regions" {
  description = "The regions by name, each with its number, peer, peer's number and endpoint (from the topology)."
  value       = module.topology.regions
}

output "registry_url" {
  description = "URL of the registry service."
  value       = module.registry.url
}

output "v1_table_arn" {
  description = "ARN of the v1 lease table idgen-leases; null unless the schedule is v1-v2."
  value       = one(aws_dynamodb_table.v1[*].arn)
}

output "lease_table_arns" {
  description = "Per region name, the ARN of its lease table."
  value = {
    "us-east-1"      = module.region_us_east_1.lease_table_arn
    "us-west-2"      = module.region_us_west_2.lease_table_arn
    "eu-west-1"      = module.region_eu_west_1.lease_table_arn
    "ap-northeast-1" = module.region_ap_northeast_1.lease_table_arn
    "ap-southeast-1" = module.region_ap_southeast_1.lease_table_arn
  }
}
