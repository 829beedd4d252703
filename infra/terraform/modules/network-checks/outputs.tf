output "availability_zones" {
  description = "Per private subnet of the hosts, its Availability Zone (each checked to offer the fleets' instance types)."
  value       = { for id, s in data.aws_subnet.private : id => s.availability_zone }
}

output "public_availability_zones" {
  description = "Per public subnet of the customer ALB, its Availability Zone (each checked to route 0.0.0.0/0 to an internet gateway)."
  value       = { for id, s in data.aws_subnet.public : id => s.availability_zone }
}
