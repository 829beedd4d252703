output "regions" {
  description = "The regions by name, each with its number, peer, peer's number and endpoint (from the topology): the plan guard refuses a change of a number here as in the registry root."
  value       = module.topology.regions
}

output "endpoint" {
  description = "Endpoint URL of this region's generators."
  value       = module.region.endpoint
}

output "lease_table_arn" {
  description = "ARN of this region's lease table (idgen-leases-v2)."
  value       = module.region.lease_table_arn
}

output "history_table_arn" {
  description = "ARN of this region's lease history table (idgen-lease-history)."
  value       = module.region.history_table_arn
}

output "alarm_names" {
  description = "Names of this region's CloudWatch alarms."
  value       = concat(module.region.alarm_names, module.public_id.alarm_names)
}

output "public_id_endpoint" {
  description = "Endpoint URL of this region's internal public-ID API (mutual TLS)."
  value       = module.public_id.endpoint
}

output "public_id_table_arn" {
  description = "ARN of this region's public-ID table (idgen-public-ids)."
  value       = module.public_id.table_arn
}

output "public_id_dynamodb_endpoint" {
  description = "URL of this region's DynamoDB interface endpoint (https://<its Regional endpoint-specific DNS name>): put it under this region in every region root's public_id_dynamodb_endpoints (live/idgen.tfvars)."
  value       = local.dynamodb_endpoint
}

output "gateway_lb_dns_name" {
  description = "DNS name of this region's customer ALB (the customer hostname's latency record in this region is an alias of it)."
  value       = module.public_id.lb_dns_name
}

output "autoscaling_group_name" {
  description = "Name of this region's generator Auto Scaling group (its instance refresh rolls a release or a certificate out)."
  value       = module.region.autoscaling_group_name
}

output "vcpus_at_max" {
  description = "vCPUs this root's fleets (the generators and both public-ID fleets) need at their peak from the region's EC2 quota L-1216C47A: max sizes plus the instance refreshes' headroom."
  value       = module.region.vcpus_at_max + module.public_id.vcpus_at_max
}
