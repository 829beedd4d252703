################################################################################
# The monitoring endpoints: Amazon Managed Service for Prometheus (aps-workspaces: the hosts'
# collectors remote-write to the region's workspace) and CloudWatch Logs (logs: the CloudWatch
# agent ships the hosts' journals). Interface endpoints with private DNS, in the same security
# group as the others, so the fleets' one egress rule to that group (HTTPS) reaches them too: a
# second rule of the same port and group would be a duplicate EC2 refuses.
################################################################################

variable "monitoring_services" {
  description = "Services of the hosts' collectors, reached through interface endpoints with private DNS in the endpoints' security group: aps-workspaces (remote write to Amazon Managed Service for Prometheus) and logs (CloudWatch Logs). [] in a VPC that has them already."
  type        = list(string)
  default     = ["aps-workspaces", "logs"]
}

resource "aws_vpc_endpoint" "monitoring" {
  for_each = toset(var.monitoring_services)

  vpc_id              = var.vpc_id
  service_name        = "com.amazonaws.${var.region}.${each.key}"
  vpc_endpoint_type   = "Interface"
  subnet_ids          = var.subnet_ids
  security_group_ids  = [aws_security_group.this.id]
  private_dns_enabled = true
  tags                = merge(local.tags, { Name = "${var.name}-${each.key}" })

  lifecycle {
    precondition {
      condition     = !contains(var.interface_services, each.key)
      error_message = "${each.key} is in both monitoring_services and interface_services: a VPC has one interface endpoint with private DNS per service."
    }
  }
}

output "monitoring_endpoint_ids" {
  description = "Per monitoring service (aps-workspaces, logs), the ID of its interface endpoint."
  value       = { for k, e in aws_vpc_endpoint.monitoring : k => e.id }
}

# The monitoring services are offered in the zone of every subnet, as the other interface services
# are checked to be (main.tf): AMP's aps-workspaces endpoints are not in every zone of a region.
# Read for its postconditions alone.
# tflint-ignore: terraform_unused_declarations
data "aws_vpc_endpoint_service" "monitoring" {
  for_each = toset(var.monitoring_services)

  service_name = "com.amazonaws.${var.region}.${each.key}"
  service_type = "Interface"

  lifecycle {
    postcondition {
      condition     = alltrue([for s in data.aws_subnet.this : contains(self.availability_zones, s.availability_zone)])
      error_message = "the interface endpoint service com.amazonaws.${var.region}.${each.key} is not offered in ${join(", ", distinct([for id, s in data.aws_subnet.this : s.availability_zone if !contains(self.availability_zones, s.availability_zone)]))} (subnets ${join(", ", [for id, s in data.aws_subnet.this : id if !contains(self.availability_zones, s.availability_zone)])}); it is offered in ${join(", ", sort(self.availability_zones))}: give subnets in zones it is offered in, or leave ${each.key} out of monitoring_services."
    }
  }
}
