output "health_check_id" {
  description = "ID of the region's Route 53 health check (its HealthCheckStatus metric is in us-east-1)."
  value       = aws_route53_health_check.this.id
}

output "fqdn" {
  description = "The customer hostname the latency record answers for."
  value       = aws_route53_record.this.fqdn
}
