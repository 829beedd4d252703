output "security_group_id" {
  description = "ID of the interface endpoints' security group: the hosts' egress rules name it."
  value       = aws_security_group.this.id
}

output "gateway_prefix_list_ids" {
  description = "Per gateway service (dynamodb, s3), the prefix list its endpoint routes."
  value       = { for k, e in aws_vpc_endpoint.gateway : k => e.prefix_list_id }
}

output "interface_endpoint_ids" {
  description = "Per interface service, the ID of its endpoint."
  value       = { for k, e in aws_vpc_endpoint.interface : k => e.id }
}
