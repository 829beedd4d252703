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
