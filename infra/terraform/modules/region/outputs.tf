output "region" {
  description = "AWS region name of this idgen region."
  value       = var.region
}

output "number" {
  description = "Region number the generators run as."
  value       = var.number
}

output "endpoint" {
  description = "Endpoint URL of the region's generators."
  value       = var.endpoint
}

output "lease_table_arn" {
  description = "ARN of the region's lease table (idgen-leases-v2)."
  value       = aws_dynamodb_table.lease.arn
}

output "history_table_arn" {
  description = "ARN of the region's lease history table (idgen-lease-history)."
  value       = aws_dynamodb_table.history.arn
}

output "role_arn" {
  description = "ARN of the generators' IAM role."
  value       = module.fleet.role_arn
}

output "autoscaling_group_name" {
  description = "Name of the generator fleet's Auto Scaling group."
  value       = module.fleet.autoscaling_group_name
}

output "target_group_arn" {
  description = "ARN of the fleet's target group (targetgroup/idgen-workers/...)."
  value       = module.fleet.target_group_arn
}

output "lb_dns_name" {
  description = "DNS name of the fleet's internal network load balancer."
  value       = module.fleet.lb_dns_name
}

output "security_group_id" {
  description = "ID of the workers' security group."
  value       = module.fleet.security_group_id
}

output "alarm_names" {
  description = "Names of the region's CloudWatch alarms."
  value = [
    aws_cloudwatch_metric_alarm.fleet_healthy_hosts.alarm_name,
    aws_cloudwatch_metric_alarm.nlb_unhealthy_hosts.alarm_name,
    aws_cloudwatch_metric_alarm.lease_throttles.alarm_name,
    aws_cloudwatch_metric_alarm.lease_system_errors.alarm_name,
  ]
}

output "vcpus_at_max" {
  description = "vCPUs the generator fleet needs at its peak from the region's EC2 quota L-1216C47A (max size plus the instance refresh's headroom)."
  value       = module.fleet.vcpus_at_max
}
