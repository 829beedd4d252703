# The registry root: what all regions share, in the home region, in a state of its own
# (backend key live/registry/terraform.tfstate). Applied first: the generators read the registry
# at start-up, and the region roots look up the private zone and, in the home VPC, its endpoints.
# module.topology is the one source of region numbers, peers and endpoints.

module "topology" {
  source = "../../modules/topology"

  endpoint_domain = var.endpoint_domain
}

data "aws_region" "current" {}

locals {
  home    = module.topology.home_region
  network = var.networks[local.home]

  # The release's objects, from the copy in this region's bucket (S3 gateway endpoints reach only
  # their own region's buckets), and the certificates from their renewable place.
  release    = replace(var.artifacts_s3_prefix, "{region}", local.home)
  tls        = replace(coalesce(var.tls_s3_prefix, "${var.artifacts_s3_prefix}/tls"), "{region}", local.home)
  s3_kms_key = var.s3_kms_key_arn == null ? null : replace(var.s3_kms_key_arn, "{region}", local.home)

  # Every region's generators read the registry at start-up; the operators administer it.
  registry_callers = distinct(concat([for n in values(var.networks) : n.vpc_cidr], var.operator_cidrs))
}

################################################################################
# The private zone of the endpoints, visible from every region's VPC
################################################################################

resource "aws_route53_zone" "this" {
  name    = var.endpoint_domain
  comment = "idgen endpoints: generators per region and the registry"

  # A private zone is made with one VPC, the home VPC; every other VPC is associated by an
  # aws_route53_zone_association (network.tf), so the zone's own list of VPCs is left to them.
  vpc {
    vpc_id     = local.network.vpc_id
    vpc_region = local.home
  }

  lifecycle {
    ignore_changes = [vpc]

    precondition {
      condition     = length(setsubtract(keys(module.topology.regions), keys(var.networks))) == 0
      error_message = "networks has no entry for: ${join(", ", setsubtract(keys(module.topology.regions), keys(var.networks)))}."
    }
    precondition {
      condition     = data.aws_region.current.name == local.home
      error_message = "the registry root runs in ${data.aws_region.current.name}, but the topology's home region is ${local.home}."
    }
  }
}

################################################################################
# The home VPC's endpoints: the registry's hosts need them at boot, and the home region's
# generators, in the same VPC, use them too (its region root does not make a second set)
################################################################################

module "endpoints" {
  source = "../../modules/endpoints"

  name            = "idgen-${local.home}"
  region          = local.home
  vpc_id          = local.network.vpc_id
  vpc_cidr        = local.network.vpc_cidr
  subnet_ids      = local.network.subnet_ids
  route_table_ids = local.network.route_table_ids

  # The home region's public-ID fleets are in this VPC: its DynamoDB interface endpoint admits the
  # other VPCs, whose public-ID programs reach the home region's table at it.
  dynamodb_peer_cidrs = [for r, n in var.networks : n.vpc_cidr if n.vpc_cidr != local.network.vpc_cidr]
}

################################################################################
# Registry
################################################################################

module "registry" {
  source = "../../modules/registry"

  region       = local.home
  schedule     = var.schedule
  vpc_id       = local.network.vpc_id
  vpc_cidr     = local.network.vpc_cidr
  subnet_ids   = local.network.subnet_ids
  caller_cidrs = local.registry_callers
  zone_id      = aws_route53_zone.this.zone_id
  dns_name     = module.topology.registry_host

  endpoints_security_group_id = module.endpoints.security_group_id

  artifact_s3_uri  = "${local.release}/bin/registry"
  callers_s3_uri   = "${local.release}/callers/registry.json"
  tls_cert_s3_uri  = "${local.tls}/registry.crt"
  tls_key_s3_uri   = "${local.tls}/registry.key"
  client_ca_s3_uri = "${local.tls}/client-ca.pem"
  s3_kms_key_arn   = local.s3_kms_key

  # The home region's pinned image and the registry's capacity (live/idgen.tfvars: fleets); the
  # group waits for the home VPC's endpoints, and its quota check counts the home region root's
  # fleets (vcpus_elsewhere's registry entry).
  ami_id                = var.fleets[local.home].ami_id
  capacity              = var.fleets[local.home].registry
  boot_dependencies     = module.endpoints.boot_dependency_ids
  quota_vcpus_elsewhere = lookup(var.vcpus_elsewhere, "registry", 0)
  alarm_actions         = lookup(var.alarm_actions, local.home, [])
}

################################################################################
# The v1 lease table: one, in the home region. Created for the v1-v2 schedule and kept after the
# cutover (its rows and the history are what an incident about a v1 ID needs): it leaves only by
# hand, as runbooks/retire-v1-table.md says, never by a change of schedule.
################################################################################

resource "aws_dynamodb_table" "v1" {
  count = var.v1_table ? 1 : 0

  name                        = "idgen-leases"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "machine_id"
  deletion_protection_enabled = true

  attribute {
    name = "machine_id"
    type = "N"
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled = true
  }

  lifecycle {
    prevent_destroy = true
  }
}
