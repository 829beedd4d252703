output "url" {
  description = "URL of the registry service (the generators' --registry)."
  value       = "https://${var.dns_name}"
}

output "table_arn" {
  description = "ARN of the registry table (idgen-regions)."
  value       = aws_dynamodb_table.this.arn
}

output "table_name" {
  description = "Name of the registry table."
  value       = aws_dynamodb_table.this.name
}

output "role_arn" {
  description = "ARN of the registry hosts' IAM role."
  value       = module.fleet.role_arn
}

output "security_group_id" {
  description = "ID of the registry hosts' security group."
  value       = module.fleet.security_group_id
}

output "lb_dns_name" {
  description = "DNS name of the registry's internal network load balancer."
  value       = module.fleet.lb_dns_name
}

output "vcpus_at_max" {
  description = "vCPUs the registry needs at its peak from the home region's EC2 quota L-1216C47A (max size plus the instance refresh's headroom)."
  value       = module.fleet.vcpus_at_max
}

output "alarm_names" {
  description = "Names of the registry's CloudWatch alarms."
  value       = [aws_cloudwatch_metric_alarm.unhealthy_hosts.alarm_name]
}
