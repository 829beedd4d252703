# The VPC endpoints of the AWS APIs idgen's hosts call, so that their security groups allow HTTPS
# only to these endpoints (and to the peers they talk to) instead of to the whole internet. One
# set per VPC: with private DNS, an interface endpoint answers for its service's name in the
# whole VPC, and a VPC can have only one such endpoint per service. Besides, the DynamoDB interface
# endpoint without private DNS, which the other regions' public-ID programs reach this region's
# table at over the Transit Gateway.

data "aws_region" "current" {}

data "aws_partition" "current" {}

data "aws_caller_identity" "current" {}

locals {
  tags = merge(var.tags, {
    Service   = "idgen"
    Component = "endpoints"
  })

  # The DynamoDB interface endpoint and its security group carry a component of their own, so
  # that a root in this VPC finds each by its tags apart from the gateway endpoint and the other
  # interface endpoints' security group.
  dynamodb_tags = merge(var.tags, {
    Service   = "idgen"
    Component = "dynamodb-endpoint"
  })

  # The other VPCs' CIDRs in their canonical form (10.1.0.1/16 is 10.1.0.0/16), without this VPC's:
  # one ingress rule each, whatever their spelling (EC2 refuses a second identical rule).
  dynamodb_peer_cidrs = var.dynamodb_interface ? toset([for c in distinct([for c in var.dynamodb_peer_cidrs : cidrsubnet(c, 0, 0)]) : c if c != cidrsubnet(var.vpc_cidr, 0, 0)]) : toset([])

  # The tables the DynamoDB interface endpoint serves (its policy), in this region and account.
  dynamodb_table_arns = [for t in var.dynamodb_interface_tables : "arn:${data.aws_partition.current.partition}:dynamodb:${var.region}:${data.aws_caller_identity.current.account_id}:table/${t}"]
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

################################################################################
# DynamoDB interface endpoint (AWS PrivateLink for DynamoDB): the public-ID programs of every
# region reach this region's idgen-public-ids table at it, the other regions' over the Transit
# Gateway. No private DNS: the hosts of this VPC keep reaching dynamodb.<region>.amazonaws.com
# (the lease and registry tables) through the gateway endpoint, and the callers name the endpoint
# by its endpoint-specific DNS name (dynamodb_endpoint_url).
################################################################################

resource "aws_security_group" "dynamodb" {
  count = var.dynamodb_interface ? 1 : 0

  name_prefix = "${var.name}-dynamodb-"
  description = "idgen DynamoDB interface endpoint: HTTPS from the other regions' VPCs and the public-ID fleets"
  vpc_id      = var.vpc_id
  tags        = merge(local.dynamodb_tags, { Name = "${var.name}-dynamodb" })

  lifecycle {
    create_before_destroy = true
  }
}

# The other regions' VPCs (their public-ID fleets, over the Transit Gateway). The local fleets'
# rules are their module's (modules/public-id), by security group.
resource "aws_vpc_security_group_ingress_rule" "dynamodb_peers" {
  for_each = local.dynamodb_peer_cidrs

  security_group_id = aws_security_group.dynamodb[0].id
  description       = "HTTPS to the DynamoDB interface endpoint from another region's VPC"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = each.key
  tags              = local.dynamodb_tags
}

# The endpoint's policy: what may be done through it, whoever calls (each caller's own IAM policy
# still applies): the public-ID programs' actions on this region's public-ID table, by principals
# of this account. TransactWriteItems of Puts is authorized as dynamodb:PutItem.
data "aws_iam_policy_document" "dynamodb" {
  statement {
    sid       = "PublicIDTables"
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Scan"]
    resources = local.dynamodb_table_arns

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:PrincipalAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

resource "aws_vpc_endpoint" "dynamodb" {
  count = var.dynamodb_interface ? 1 : 0

  vpc_id              = var.vpc_id
  service_name        = "com.amazonaws.${var.region}.dynamodb"
  vpc_endpoint_type   = "Interface"
  subnet_ids          = var.subnet_ids
  security_group_ids  = [aws_security_group.dynamodb[0].id]
  private_dns_enabled = false
  policy              = data.aws_iam_policy_document.dynamodb.json
  tags                = merge(local.dynamodb_tags, { Name = "${var.name}-dynamodb-interface" })

  lifecycle {
    # The first DNS entry is the Regional endpoint-specific name, the others the zonal ones
    # (vpce-…-<az>.dynamodb.…): the URL the other regions use must be the Regional one.
    postcondition {
      condition     = can(regex("^vpce-[0-9a-z]+-[0-9a-z]+\\.dynamodb\\.${var.region}\\.vpce\\.amazonaws\\.com$", self.dns_entry[0].dns_name))
      error_message = "the DynamoDB interface endpoint's first DNS entry is not its Regional endpoint-specific name (vpce-<id>-<suffix>.dynamodb.${var.region}.vpce.amazonaws.com)."
    }
  }
}

################################################################################
# What the endpoints need of the VPC and its subnets, checked against AWS at plan time: the plan
# stops, naming what is missing, before an endpoint is made where it cannot serve.
################################################################################

# Private DNS of the interface endpoints needs the VPC's DNS support and DNS hostnames.
# Read for its postconditions alone.
# tflint-ignore: terraform_unused_declarations
data "aws_vpc" "this" {
  id = var.vpc_id

  lifecycle {
    postcondition {
      condition     = self.enable_dns_support
      error_message = "VPC ${var.vpc_id} in ${var.region} has DNS support off; the interface endpoints' private DNS (and every name the hosts resolve) needs it: set enable_dns_support."
    }
    postcondition {
      condition     = self.enable_dns_hostnames
      error_message = "VPC ${var.vpc_id} in ${var.region} has DNS hostnames off; private DNS of the interface endpoints needs it: set enable_dns_hostnames."
    }
    postcondition {
      condition     = contains([for c in concat([self.cidr_block], [for a in self.cidr_block_associations : a.cidr_block]) : cidrsubnet(c, 0, 0)], cidrsubnet(var.vpc_cidr, 0, 0))
      error_message = "VPC ${var.vpc_id} in ${var.region} has CIDR ${self.cidr_block}, not ${var.vpc_cidr} (vpc_cidr): the endpoints' security groups would admit the wrong network."
    }
  }
}

data "aws_subnet" "this" {
  for_each = toset(var.subnet_ids)

  id = each.key

  lifecycle {
    postcondition {
      condition     = self.vpc_id == var.vpc_id
      error_message = "subnet ${each.key} in ${var.region} is in ${self.vpc_id}, not in ${var.vpc_id}: the endpoints' network interfaces go in the VPC's own subnets."
    }
  }
}

# Every interface endpoint's service (and the DynamoDB interface endpoint's) is offered in the
# zone of every subnet its network interfaces go in.
# Read for its postconditions alone.
# tflint-ignore: terraform_unused_declarations
data "aws_vpc_endpoint_service" "interface" {
  for_each = toset(concat(var.interface_services, var.dynamodb_interface ? ["dynamodb"] : []))

  service_name = "com.amazonaws.${var.region}.${each.key}"
  service_type = "Interface"

  lifecycle {
    postcondition {
      condition     = alltrue([for s in data.aws_subnet.this : contains(self.availability_zones, s.availability_zone)])
      error_message = "the interface endpoint service com.amazonaws.${var.region}.${each.key} is not offered in ${join(", ", distinct([for id, s in data.aws_subnet.this : s.availability_zone if !contains(self.availability_zones, s.availability_zone)]))} (subnets ${join(", ", [for id, s in data.aws_subnet.this : id if !contains(self.availability_zones, s.availability_zone)])}); it is offered in ${join(", ", sort(self.availability_zones))}: give subnets in zones it is offered in."
    }
  }
}
