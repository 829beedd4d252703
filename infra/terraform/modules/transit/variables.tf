variable "name" {
  description = "Prefix of the Name tags (for example idgen-eu-west-1)."
  type        = string
}

variable "region" {
  description = "AWS region of the VPC and the Transit Gateway. It must be the region of the aws provider the module is given."
  type        = string
}

variable "transit_gateway_id" {
  description = "An existing Transit Gateway of this region to attach the VPC to; null creates one (default route table association and propagation off: the module's own route table carries idgen's routes)."
  type        = string
  default     = null

  validation {
    condition     = var.transit_gateway_id == null || can(regex("^tgw-[0-9a-f]+$", coalesce(var.transit_gateway_id, "-")))
    error_message = "transit_gateway_id must be null or a Transit Gateway ID (tgw-…)."
  }
}

variable "amazon_side_asn" {
  description = "Private ASN of the Transit Gateway created here (64512-65534; one per region, so that the peered gateways differ). Not used with transit_gateway_id."
  type        = number
  default     = 64512

  validation {
    condition     = var.amazon_side_asn >= 64512 && var.amazon_side_asn <= 65534
    error_message = "amazon_side_asn must be a 16-bit private ASN (64512-65534)."
  }
}

variable "vpc_id" {
  description = "The VPC of the region's hosts: attached to the Transit Gateway in subnet_ids."
  type        = string
}

variable "vpc_cidr" {
  description = "CIDR of the VPC (propagated into the module's Transit Gateway route table: the peers' traffic reaches the VPC by it)."
  type        = string

  validation {
    condition     = can(cidrnetmask(var.vpc_cidr)) && !endswith(var.vpc_cidr, "/0")
    error_message = "vpc_cidr must be an IPv4 CIDR narrower than /0."
  }
}

variable "subnet_ids" {
  description = "Subnets of the VPC attachment, one per Availability Zone (the hosts' private subnets): a zone without one cannot send to the Transit Gateway."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) > 0
    error_message = "subnet_ids must name the hosts' subnets."
  }
}

variable "route_table_ids" {
  description = "Route tables of the hosts' subnets: each gets a route to every ready peer's CIDRs through the Transit Gateway."
  type        = list(string)

  validation {
    condition     = length(var.route_table_ids) > 0
    error_message = "route_table_ids must name the route tables of the hosts' subnets."
  }
}

variable "peers" {
  description = "Per region this one exchanges traffic with (modules/topology's transit_peers): its VPC's CIDR and its callers' CIDRs (routed too, unless inside a VPC of the pair), whether this side requests the peering, the peer's Transit Gateway ID (null until its root is applied; the requester needs it) and the peering attachment's ID (null until the requester has made it; the accepter needs it, the requester is given its own back once it is recorded, and only then routes to it)."
  type = map(object({
    vpc_cidr           = string
    caller_cidrs       = list(string)
    request            = bool
    transit_gateway_id = string
    attachment_id      = string
  }))
  default = {}

  validation {
    condition     = alltrue([for p, v in var.peers : can(cidrnetmask(v.vpc_cidr)) && alltrue([for c in v.caller_cidrs : can(cidrnetmask(c))])])
    error_message = "peers' vpc_cidr and caller_cidrs must be IPv4 CIDRs."
  }
  validation {
    condition     = alltrue([for p, v in var.peers : v.transit_gateway_id == null || can(regex("^tgw-[0-9a-f]+$", coalesce(v.transit_gateway_id, "-")))])
    error_message = "peers' transit_gateway_id must be null or a Transit Gateway ID (tgw-…)."
  }
  validation {
    condition     = alltrue([for p, v in var.peers : v.attachment_id == null || can(regex("^tgw-attach-[0-9a-f]+$", coalesce(v.attachment_id, "-")))])
    error_message = "peers' attachment_id must be null or a Transit Gateway attachment ID (tgw-attach-…)."
  }
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
