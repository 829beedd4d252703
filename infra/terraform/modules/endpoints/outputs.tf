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

output "dynamodb_endpoint_url" {
  description = "URL of the DynamoDB interface endpoint (https://<its Regional endpoint-specific DNS name>, vpce-….dynamodb.<region>.vpce.amazonaws.com): every region's public-ID store file names this region's table at it. null without dynamodb_interface."
  value       = var.dynamodb_interface ? "https://${aws_vpc_endpoint.dynamodb[0].dns_entry[0].dns_name}" : null
}

output "dynamodb_security_group_id" {
  description = "ID of the DynamoDB interface endpoint's security group: the public-ID fleets' egress names it, and modules/public-id admits them on it. null without dynamodb_interface."
  value       = var.dynamodb_interface ? aws_security_group.dynamodb[0].id : null
}

output "availability_zones" {
  description = "Per subnet of the interface endpoints, its Availability Zone (each checked to offer every interface endpoint's service)."
  value       = { for id, s in data.aws_subnet.this : id => s.availability_zone }
}

output "boot_dependency_ids" {
  description = "IDs of what a host in the VPC needs at boot: the gateway and interface endpoints and the ingress rule of their security group. A fleet's Auto Scaling group waits for them (modules/fleet boot_dependencies)."
  value = concat(
    [for k in sort(keys(aws_vpc_endpoint.gateway)) : aws_vpc_endpoint.gateway[k].id],
    [for k in sort(keys(aws_vpc_endpoint.interface)) : aws_vpc_endpoint.interface[k].id],
    [aws_vpc_security_group_ingress_rule.https.id],
  )
}
