# One region's Transit Gateway and its peerings with every region this one exchanges traffic with:
# the VPC attachment in the hosts' subnets, a route table of idgen's own, a peering attachment per
# peer (requested by the lower-numbered region of the pair, accepted by the other, each in its own
# root and state), a route per peer CIDR in the Transit Gateway's route table and in each of the
# hosts' route tables. A peer is routed once its peering exists on both sides (the attachment's ID
# is given to this side); until then nothing is routed to it.

data "aws_region" "current" {}

locals {
  tags = merge(var.tags, {
    Service   = "idgen"
    Component = "transit"
  })

  create             = var.transit_gateway_id == null
  transit_gateway_id = local.create ? aws_ec2_transit_gateway.this[0].id : var.transit_gateway_id
  vpc_cidr           = cidrsubnet(var.vpc_cidr, 0, 0)

  # What is routed to each peer: its VPC and those of its callers' networks that are not inside
  # its VPC or this one (a caller in either VPC is reached by the VPC's route), in canonical form.
  destinations = {
    for p, v in var.peers : p => distinct(concat([cidrsubnet(v.vpc_cidr, 0, 0)], [
      for c in v.caller_cidrs : cidrsubnet(c, 0, 0)
      if !(tonumber(split("/", c)[1]) >= tonumber(split("/", v.vpc_cidr)[1]) && cidrsubnet("${split("/", c)[0]}/${split("/", v.vpc_cidr)[1]}", 0, 0) == cidrsubnet(v.vpc_cidr, 0, 0))
      && !(tonumber(split("/", c)[1]) >= tonumber(split("/", var.vpc_cidr)[1]) && cidrsubnet("${split("/", c)[0]}/${split("/", var.vpc_cidr)[1]}", 0, 0) == local.vpc_cidr)
    ]))
  }

  # A destination named for two peers (or this VPC) cannot be routed to both.
  destination_peers = { for c in distinct(flatten(values(local.destinations))) : c => sort([for p, ds in local.destinations : p if contains(ds, c)]) }
  ambiguous         = { for c, ps in local.destination_peers : c => ps if length(ps) > 1 || c == local.vpc_cidr }

  # This side requests the peerings with the peers it is the lower-numbered region of, once their
  # Transit Gateway is known; it accepts the others' once their attachment's ID is given.
  requests = { for p, v in var.peers : p => v if v.request && v.transit_gateway_id != null }
  accepts  = { for p, v in var.peers : p => v if !v.request && v.attachment_id != null }
  # Routed: a peering both sides have (the requester is given its own attachment's ID back when it
  # is recorded for the accepter).
  ready = { for p, v in var.peers : p => v if v.attachment_id != null && (!v.request || v.transit_gateway_id != null) }

  attachment_ids = merge(
    { for p, a in aws_ec2_transit_gateway_peering_attachment.this : p => a.id },
    { for p, a in aws_ec2_transit_gateway_peering_attachment_accepter.this : p => a.transit_gateway_attachment_id },
  )

  tgw_routes = { for r in flatten([for p in keys(local.ready) : [for c in local.destinations[p] : { peer = p, cidr = c }]]) : "${r.peer} ${r.cidr}" => r }
  vpc_routes = { for r in flatten([for rt in var.route_table_ids : [for p in keys(local.ready) : [for c in local.destinations[p] : { route_table_id = rt, peer = p, cidr = c }]]]) : "${r.route_table_id} ${r.cidr}" => r }
}

resource "aws_ec2_transit_gateway" "this" {
  count = local.create ? 1 : 0

  description                     = "idgen ${var.region}"
  amazon_side_asn                 = var.amazon_side_asn
  auto_accept_shared_attachments  = "disable"
  default_route_table_association = "disable"
  default_route_table_propagation = "disable"
  dns_support                     = "enable"
  tags                            = merge(local.tags, { Name = var.name })

  lifecycle {
    precondition {
      condition     = data.aws_region.current.name == var.region
      error_message = "the aws provider given to this module is in ${data.aws_region.current.name}, not ${var.region}."
    }
  }
}

resource "aws_ec2_transit_gateway_route_table" "this" {
  transit_gateway_id = local.transit_gateway_id
  tags               = merge(local.tags, { Name = var.name })

  lifecycle {
    precondition {
      condition     = length(keys(local.ambiguous)) == 0
      error_message = "routed to more than one place: ${join("; ", [for c, ps in local.ambiguous : "${c} (${join(", ", c == local.vpc_cidr ? concat(["this VPC"], ps) : ps)})"])}: each peer's VPC and callers' networks must be its own."
    }
  }
}

resource "aws_ec2_transit_gateway_vpc_attachment" "this" {
  transit_gateway_id = local.transit_gateway_id
  vpc_id             = var.vpc_id
  subnet_ids         = var.subnet_ids
  dns_support        = "enable"

  # Associated with and propagated into the module's own route table, not the gateway's default.
  transit_gateway_default_route_table_association = false
  transit_gateway_default_route_table_propagation = false

  tags = merge(local.tags, { Name = var.name })
}

resource "aws_ec2_transit_gateway_route_table_association" "vpc" {
  transit_gateway_attachment_id  = aws_ec2_transit_gateway_vpc_attachment.this.id
  transit_gateway_route_table_id = aws_ec2_transit_gateway_route_table.this.id
  replace_existing_association   = true
}

# The peers' traffic reaches the VPC by its propagated CIDR.
resource "aws_ec2_transit_gateway_route_table_propagation" "vpc" {
  transit_gateway_attachment_id  = aws_ec2_transit_gateway_vpc_attachment.this.id
  transit_gateway_route_table_id = aws_ec2_transit_gateway_route_table.this.id
}

################################################################################
# Peerings: the lower-numbered region of a pair requests, the other accepts
################################################################################

resource "aws_ec2_transit_gateway_peering_attachment" "this" {
  for_each = local.requests

  transit_gateway_id      = local.transit_gateway_id
  peer_region             = each.key
  peer_transit_gateway_id = each.value.transit_gateway_id
  tags                    = merge(local.tags, { Name = "${var.name}-to-${each.key}" })
}

# The attachment given to accept, as this region sees it, checked before it is accepted: the
# peer's request to this region's gateway, pending acceptance or accepted.
data "aws_ec2_transit_gateway_peering_attachment" "accepting" {
  for_each = local.accepts

  id = each.value.attachment_id

  lifecycle {
    postcondition {
      condition     = self.peer_region == each.key && self.transit_gateway_id == local.transit_gateway_id
      error_message = "the peering attachment ${each.value.attachment_id} given for ${each.key} joins ${self.peer_region}'s ${self.peer_transit_gateway_id} to ${self.transit_gateway_id}, not ${each.key}'s to this region's ${local.transit_gateway_id}: give the ID that ${each.key}'s root outputs for ${var.region} (transit_peering_attachments)."
    }
    postcondition {
      condition     = contains(["pendingAcceptance", "available", "modifying"], self.state)
      error_message = "the peering attachment ${each.value.attachment_id} of ${each.key} with ${var.region} is ${self.state}: it cannot be accepted; apply ${each.key}'s root again for a new one (its output transit_peering_attachments)."
    }
  }
}

resource "aws_ec2_transit_gateway_peering_attachment_accepter" "this" {
  for_each = local.accepts

  transit_gateway_attachment_id = data.aws_ec2_transit_gateway_peering_attachment.accepting[each.key].id
  tags                          = merge(local.tags, { Name = "${var.name}-from-${each.key}" })
}

# A peering attachment is associated with the route table of each side (peering attachments do
# not propagate: the routes below are static).
resource "aws_ec2_transit_gateway_route_table_association" "peers" {
  for_each = local.ready

  transit_gateway_attachment_id  = local.attachment_ids[each.key]
  transit_gateway_route_table_id = aws_ec2_transit_gateway_route_table.this.id
  replace_existing_association   = true

  lifecycle {
    precondition {
      condition     = try(aws_ec2_transit_gateway_peering_attachment.this[each.key].id == each.value.attachment_id, true)
      error_message = "transit_peering_attachments gives ${each.value.attachment_id} for the peering of ${var.region} with ${each.key}, but this root's attachment to ${each.key} is ${try(aws_ec2_transit_gateway_peering_attachment.this[each.key].id, "none")}: record this root's output transit_peering_attachments."
    }
    precondition {
      condition     = try(aws_ec2_transit_gateway_peering_attachment.this[each.key].state, "available") == "available"
      error_message = "the peering attachment of ${var.region} with ${each.key} is ${try(aws_ec2_transit_gateway_peering_attachment.this[each.key].state, "?")}, not available: apply ${each.key}'s root (it accepts) before routing to it here."
    }
  }
}

resource "aws_ec2_transit_gateway_route" "peers" {
  for_each = local.tgw_routes

  destination_cidr_block         = each.value.cidr
  transit_gateway_attachment_id  = local.attachment_ids[each.value.peer]
  transit_gateway_route_table_id = aws_ec2_transit_gateway_route_table.this.id
}

resource "aws_route" "peers" {
  for_each = local.vpc_routes

  route_table_id         = each.value.route_table_id
  destination_cidr_block = each.value.cidr
  transit_gateway_id     = local.transit_gateway_id

  # A VPC route to a Transit Gateway needs the VPC's attachment to it.
  depends_on = [aws_ec2_transit_gateway_vpc_attachment.this]
}
