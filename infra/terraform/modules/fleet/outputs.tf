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

output "vcpus_at_max" {
  description = "vCPUs the group needs at its peak from the region's EC2 quota of running On-Demand Standard instances (L-1216C47A): its max size plus the instance refresh's headroom, times the instance type's vCPUs. A caller adds it to the quota_vcpus_elsewhere of the region's other fleets."
  value       = local.peak_instances * data.aws_ec2_instance_type.this.default_vcpus
}
