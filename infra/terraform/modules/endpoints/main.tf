# The VPC endpoints of the AWS APIs idgen's hosts call, so that their security groups allow HTTPS
# only to these endpoints (and to the peers they talk to) instead of to the whole internet. One
# set per VPC: with private DNS, an interface endpoint answers for its service's name in the
# whole VPC, and a VPC can have only one such endpoint per service.

data "aws_region" "current" {}

locals {
  tags = merge(var.tags, {
    Service   = "idgen"
    Component = "endpoints"
  })
}

resource "aws_security_group" "this" {
  name_prefix = "${var.name}-endpoints-"
  description = "idgen VPC endpoints: HTTPS from the VPC"
  vpc_id      = var.vpc_id
  tags        = merge(local.tags, { Name = "${var.name}-endpoints" })

  lifecycle {
    create_before_destroy = true

    precondition {
      condition     = data.aws_region.current.name == var.region
      error_message = "the aws provider given to this module is in ${data.aws_region.current.name}, not ${var.region}."
    }
  }
}

resource "aws_vpc_security_group_ingress_rule" "https" {
  security_group_id = aws_security_group.this.id
  description       = "HTTPS from the VPC to the interface endpoints"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = var.vpc_cidr
  tags              = local.tags
}

resource "aws_vpc_endpoint" "gateway" {
  for_each = toset(var.gateway_services)

  vpc_id            = var.vpc_id
  service_name      = "com.amazonaws.${var.region}.${each.key}"
  vpc_endpoint_type = "Gateway"
  route_table_ids   = var.route_table_ids
  tags              = merge(local.tags, { Name = "${var.name}-${each.key}" })
}

resource "aws_vpc_endpoint" "interface" {
  for_each = toset(var.interface_services)

  vpc_id              = var.vpc_id
  service_name        = "com.amazonaws.${var.region}.${each.key}"
  vpc_endpoint_type   = "Interface"
  subnet_ids          = var.subnet_ids
  security_group_ids  = [aws_security_group.this.id]
  private_dns_enabled = true
  tags                = merge(local.tags, { Name = "${var.name}-${each.key}" })
}
