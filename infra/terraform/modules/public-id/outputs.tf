output "table_arn" {
  description = "ARN of this region's public-ID table (idgen-public-ids)."
  value       = aws_dynamodb_table.public_ids.arn
}

output "table_arns" {
  description = "ARNs of the public-ID tables of every region of the topology, which both fleets' roles are granted."
  value       = local.table_arns
}

output "store_file" {
  description = "The store file both programs read (/etc/idgen/public-id/regions.json, --store regions:…), as the hosts get it."
  value       = local.store_doc
}

output "endpoint" {
  description = "Endpoint URL of the internal API (mutual TLS)."
  value       = "https://${var.dns_name}"
}

output "public_id_role_arn" {
  description = "ARN of the internal API hosts' IAM role."
  value       = module.public_id.role_arn
}

output "gateway_role_arn" {
  description = "ARN of the gateway hosts' IAM role."
  value       = module.gateway.role_arn
}

output "public_id_autoscaling_group_name" {
  description = "Name of the internal API's Auto Scaling group."
  value       = module.public_id.autoscaling_group_name
}

output "gateway_autoscaling_group_name" {
  description = "Name of the gateway's Auto Scaling group."
  value       = module.gateway.autoscaling_group_name
}

output "lb_dns_name" {
  description = "DNS name of the customer gateway's internet-facing ALB (the customer hostname's latency record is an alias of it)."
  value       = aws_lb.gateway.dns_name
}

output "lb_zone_id" {
  description = "Route 53 zone ID of the ALB's DNS name (for alias records)."
  value       = aws_lb.gateway.zone_id
}

output "access_log_bucket" {
  description = "Bucket of the ALB's access logs (under alb/)."
  value       = aws_s3_bucket.alb_logs.id
}

output "redis_primary_endpoint" {
  description = "Primary endpoint address of the regional Redis (port 6379, TLS, AUTH)."
  value       = aws_elasticache_replication_group.cache.primary_endpoint_address
}

output "redis_replication_group_id" {
  description = "ID of the regional Redis replication group."
  value       = aws_elasticache_replication_group.cache.id
}

output "public_id_security_group_id" {
  description = "ID of the internal API hosts' security group."
  value       = module.public_id.security_group_id
}

output "gateway_security_group_id" {
  description = "ID of the gateway hosts' security group."
  value       = module.gateway.security_group_id
}

output "alarm_names" {
  description = "Names of the public-ID CloudWatch alarms of the region."
  value = [
    aws_cloudwatch_metric_alarm.gateway_5xx.alarm_name,
    aws_cloudwatch_metric_alarm.gateway_unhealthy_hosts.alarm_name,
    aws_cloudwatch_metric_alarm.public_id_unhealthy_hosts.alarm_name,
    aws_cloudwatch_metric_alarm.table_throttles.alarm_name,
    aws_cloudwatch_metric_alarm.table_system_errors.alarm_name,
    aws_cloudwatch_metric_alarm.redis_cpu.alarm_name,
    aws_cloudwatch_metric_alarm.redis_memory.alarm_name,
    aws_cloudwatch_metric_alarm.redis_evictions.alarm_name,
  ]
}

output "vcpus_at_max" {
  description = "vCPUs both fleets need at their peak from the region's EC2 quota L-1216C47A (max sizes plus the instance refreshes' headroom)."
  value       = module.public_id.vcpus_at_max + module.gateway.vcpus_at_max
}
