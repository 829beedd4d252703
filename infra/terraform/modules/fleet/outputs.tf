output "autoscaling_group_name" {
  description = "Name of the Auto Scaling group."
  value       = aws_autoscaling_group.this.name
}

output "launch_template_id" {
  description = "ID of the launch template."
  value       = aws_launch_template.this.id
}

output "role_name" {
  description = "Name of the hosts' IAM role."
  value       = aws_iam_role.this.name
}

output "role_arn" {
  description = "ARN of the hosts' IAM role."
  value       = aws_iam_role.this.arn
}

output "security_group_id" {
  description = "ID of the hosts' security group."
  value       = aws_security_group.this.id
}

output "lb_arn" {
  description = "ARN of the internal network load balancer; null with load_balancer none."
  value       = one(aws_lb.this[*].arn)
}

output "lb_arn_suffix" {
  description = "ARN suffix of the load balancer (the LoadBalancer dimension of its CloudWatch metrics); null with load_balancer none."
  value       = one(aws_lb.this[*].arn_suffix)
}

output "lb_dns_name" {
  description = "DNS name of the load balancer; null with load_balancer none."
  value       = one(aws_lb.this[*].dns_name)
}

output "target_group_arn" {
  description = "ARN of the target group; null with load_balancer none."
  value       = one(aws_lb_target_group.this[*].arn)
}

output "target_group_arn_suffix" {
  description = "ARN suffix of the target group (the TargetGroup dimension of its CloudWatch metrics); null with load_balancer none."
  value       = one(aws_lb_target_group.this[*].arn_suffix)
}

output "fqdn" {
  description = "Fully qualified name of the endpoint record; null with load_balancer none."
  value       = one(aws_route53_record.this[*].fqdn)
}

output "unit" {
  description = "Name of the service's systemd unit on every host."
  value       = local.unit
}
