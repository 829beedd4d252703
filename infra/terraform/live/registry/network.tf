################################################################################
# The private zone's associations: every region's VPC (the home VPC is the zone's own) and the
# callers' VPCs outside them, so that every caller resolves the endpoints' names. Same account:
# a VPC of another account needs an aws_route53_vpc_association_authorization here and the
# association made in that account, which this root does not do.
################################################################################

locals {
  network_vpc_ids = distinct([for n in values(var.networks) : n.vpc_id])

  # Each callers' VPC once, by region and ID; the VPCs of networks are associated as such.
  caller_vpcs = {
    for v in distinct(flatten([for r, ids in var.caller_vpcs : [for id in ids : { region = r, vpc_id = id }]])) :
    "${v.region}:${v.vpc_id}" => v if !contains(local.network_vpc_ids, v.vpc_id)
  }
}

resource "aws_route53_zone_association" "networks" {
  for_each = { for r, n in var.networks : r => n if n.vpc_id != local.network.vpc_id }

  zone_id    = aws_route53_zone.this.zone_id
  vpc_id     = each.value.vpc_id
  vpc_region = each.key
}

resource "aws_route53_zone_association" "callers" {
  for_each = local.caller_vpcs

  zone_id    = aws_route53_zone.this.zone_id
  vpc_id     = each.value.vpc_id
  vpc_region = each.value.region
}

variable "caller_vpcs" {
  description = "Per AWS region, the IDs of the callers' VPCs there outside networks (in this account), which the private zone of the endpoints is associated with: without it they cannot resolve any endpoint. Registry root only."
  type        = map(list(string))
  default     = {}

  validation {
    condition     = alltrue([for r, ids in var.caller_vpcs : can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]+$", r)) && alltrue([for id in ids : can(regex("^vpc-[0-9a-f]+$", id))])])
    error_message = "caller_vpcs must map AWS region names to VPC IDs (vpc-…)."
  }
}

output "zone_vpcs" {
  description = "The VPCs the private zone of the endpoints is associated with, by region: every region's and the callers'."
  value = {
    for r in distinct(concat(keys(var.networks), [for v in values(local.caller_vpcs) : v.region])) : r => sort(distinct(concat(
      [for n, net in var.networks : net.vpc_id if n == r],
      [for v in values(local.caller_vpcs) : v.vpc_id if v.region == r],
    )))
  }
}
