################################################################################
# The region's network: the VPC, subnets and public subnets it is given, checked at plan time
# (modules/network-checks; the VPC's DNS and the endpoint services' zones by modules/endpoints),
# and its Transit Gateway, peered with every region this one exchanges traffic with
# (modules/transit; the pairs and which side requests from modules/topology's transit_peers).
################################################################################

locals {
  # The instance types of the fleets in the hosts' subnets: modules/region's and
  # modules/public-id's instance_type (a test holds them equal).
  fleet_instance_types = ["c7g.large"]

  # The peerings: per region this one exchanges traffic with (in another VPC), its networks, which
  # side requests, the peer's Transit Gateway (its root's output) and the attachment's ID (the
  # requester's root's output), each null until known.
  transit_peers = {
    for p, t in module.topology.transit_peers[local.region] : p => {
      vpc_cidr           = var.networks[p].vpc_cidr
      caller_cidrs       = var.networks[p].caller_cidrs
      request            = t.request
      transit_gateway_id = try(var.transit_gateways[p], null)
      attachment_id      = try(var.transit_peering_attachments[t.request ? "${local.region}:${p}" : "${p}:${local.region}"], null)
    } if var.networks[p].vpc_id != local.network.vpc_id
  }
}

module "network_checks" {
  source = "../../../modules/network-checks"

  region            = local.region
  vpc_id            = local.network.vpc_id
  subnet_ids        = local.network.subnet_ids
  public_subnet_ids = local.network.public_subnet_ids
  instance_types    = local.fleet_instance_types
}

module "transit" {
  source = "../../../modules/transit"

  name               = "idgen-${local.region}"
  region             = local.region
  transit_gateway_id = try(var.existing_transit_gateways[local.region], null)
  amazon_side_asn    = 64512 + module.topology.regions[local.region].number
  vpc_id             = local.network.vpc_id
  vpc_cidr           = local.network.vpc_cidr
  subnet_ids         = local.network.subnet_ids
  route_table_ids    = local.network.route_table_ids
  peers              = local.transit_peers
}

variable "transit_gateways" {
  description = "Per region, its Transit Gateway's ID (that region root's output transit_gateway_id); a region whose root is not applied yet is left out or null, and is not peered with until it is given. A root requests the peerings with the regions of higher number whose Transit Gateway is given here. Region roots only."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for r, id in var.transit_gateways : id == null || can(regex("^tgw-[0-9a-f]+$", coalesce(id, "-")))])
    error_message = "transit_gateways values must be null or Transit Gateway IDs (tgw-…)."
  }
}

variable "transit_peering_attachments" {
  description = "Per peering, keyed <requester>:<accepter> (the requester being the lower-numbered region), its attachment's ID (the requester root's output transit_peering_attachments). The accepter's root accepts it; both roots route to each other once it is here (the requester's plan stops if its attachment is not accepted yet). A key that names no peering of the topology stops the plan. Region roots only."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for k, id in var.transit_peering_attachments : can(regex("^[a-z0-9-]+:[a-z0-9-]+$", k)) && (id == null || can(regex("^tgw-attach-[0-9a-f]+$", coalesce(id, "-"))))])
    error_message = "transit_peering_attachments keys must be <requester region>:<accepter region>, values null or Transit Gateway attachment IDs (tgw-attach-…)."
  }
}

variable "existing_transit_gateways" {
  description = "Per region, an existing Transit Gateway of that region to attach its VPC to instead of creating one; a region not named gets a Transit Gateway of its own. Region roots only."
  type        = map(string)
  default     = {}
}

output "transit_gateway_id" {
  description = "ID of this region's Transit Gateway: put it under this region in transit_gateways (live/idgen.tfvars), for the other roots to peer with it."
  value       = module.transit.transit_gateway_id
}

output "transit_route_table_id" {
  description = "ID of the Transit Gateway route table of idgen's routes: a callers' VPC outside networks attached to this region's Transit Gateway is associated with it and propagates into it, to reach this region's and its peers' endpoints."
  value       = module.transit.route_table_id
}

output "transit_peering_attachments" {
  description = "The peerings this region requested (of the regions of higher number), keyed <this region>:<peer>, with their attachments' IDs: put them in transit_peering_attachments (live/idgen.tfvars) for the peers to accept."
  value       = { for p, id in module.transit.peering_attachment_ids : "${local.region}:${p}" => id }

  # A key that names no peering would be passed over by every root: the pair's routes would be
  # missing without a word.
  precondition {
    condition     = length(setsubtract(keys(var.transit_peering_attachments), flatten([for r, ps in module.topology.transit_peers : [for p, t in ps : "${r}:${p}" if t.request]]))) == 0
    error_message = "transit_peering_attachments names no peering of the topology: ${join(", ", setsubtract(keys(var.transit_peering_attachments), flatten([for r, ps in module.topology.transit_peers : [for p, t in ps : "${r}:${p}" if t.request]])))} (keys are <requester>:<accepter>, the requester the lower-numbered region of the pair)."
  }
}
