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

output "zone_id" {
  description = "ID of the private zone of the endpoints (the region roots find it by name)."
  value       = aws_route53_zone.this.zone_id
}

output "v1_table_arn" {
  description = "ARN of the v1 lease table idgen-leases; null when v1_table is false."
  value       = one(aws_dynamodb_table.v1[*].arn)

  precondition {
    condition     = var.schedule != "v1-v2" || var.v1_table
    error_message = "schedule v1-v2 needs the v1 lease table idgen-leases: set v1_table = true (and keep it true after the cutover; runbooks/retire-v1-table.md says when and how the table may go)."
  }
}

output "vcpus_at_max" {
  description = "vCPUs the registry needs at its peak from the home region's EC2 quota L-1216C47A (max size plus the instance refresh's headroom): put it under the home region's name in vcpus_elsewhere (live/idgen.tfvars), which the home region root's quota check counts."
  value       = module.registry.vcpus_at_max
}
