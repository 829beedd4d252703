# The idgen region us-west-2: its lease tables, generator fleet, VPC endpoints, public-ID programs
# (table, Redis, internal API, customer gateway and its ALB), its share of the customer hostname and
# its alarms, in a state of its own (backend key live/regions/us-west-2/terraform.tfstate). Every region root is this file
# with its own region's name (a test holds them alike). It takes what it needs from the topology
# and the registry root as values and lookups, so it plans on its own once the registry root was
# applied.

locals {
  region  = "us-west-2"
  network = var.networks[local.region]
  home    = module.topology.home_region

  # One set of VPC endpoints per VPC: the registry root makes the home VPC's (its hosts need them
  # at boot); a region in another VPC makes its own.
  shares_home_vpc = local.network.vpc_id == var.networks[local.home].vpc_id

  # The callers of every region whose peer this one is: they fail over here.
  failover_callers = distinct(flatten([for r in module.topology.failover_sources[local.region] : var.networks[r].caller_cidrs]))

  # The other regions' VPCs: the public-ID programs read and write their tables too.
  other_vpcs = distinct([for r, n in var.networks : n.vpc_cidr if r != local.region && n.vpc_cidr != local.network.vpc_cidr])

  # The release's objects from this region's copy, the certificates from their renewable place.
  release    = replace(var.artifacts_s3_prefix, "{region}", local.region)
  tls        = replace(coalesce(var.tls_s3_prefix, "${var.artifacts_s3_prefix}/tls"), "{region}", local.region)
  s3_kms_key = var.s3_kms_key_arn == null ? null : replace(var.s3_kms_key_arn, "{region}", local.region)
}

module "topology" {
  source = "../../../modules/topology"

  endpoint_domain = var.endpoint_domain
}

# The private zone of the endpoints, which the registry root made and associated with this VPC.
data "aws_route53_zone" "endpoints" {
  name         = var.endpoint_domain
  private_zone = true
  vpc_id       = local.network.vpc_id
}

module "endpoints" {
  source = "../../../modules/endpoints"
  count  = local.shares_home_vpc ? 0 : 1

  name            = "idgen-${local.region}"
  region          = local.region
  vpc_id          = local.network.vpc_id
  vpc_cidr        = local.network.vpc_cidr
  subnet_ids      = local.network.subnet_ids
  route_table_ids = local.network.route_table_ids

  # The DynamoDB interface endpoint admits the other regions' VPCs: their public-ID programs
  # reach this region's table at it over the Transit Gateway.
  dynamodb_peer_cidrs = local.other_vpcs
}

# In the home VPC, the endpoints the registry root made.
data "aws_security_group" "home_endpoints" {
  count = local.shares_home_vpc ? 1 : 0

  vpc_id = local.network.vpc_id
  tags = {
    Service   = "idgen"
    Component = "endpoints"
  }
}

# In the home VPC, the DynamoDB interface endpoint the registry root made, and its security group.
data "aws_vpc_endpoint" "home_dynamodb" {
  count = local.shares_home_vpc ? 1 : 0

  vpc_id       = local.network.vpc_id
  service_name = "com.amazonaws.${local.region}.dynamodb"
  tags = {
    Service   = "idgen"
    Component = "dynamodb-endpoint"
  }

  lifecycle {
    # The first DNS entry is the Regional endpoint-specific name (modules/endpoints).
    postcondition {
      condition     = can(regex("^vpce-[0-9a-z]+-[0-9a-z]+\\.dynamodb\\.${local.region}\\.vpce\\.amazonaws\\.com$", self.dns_entry[0].dns_name))
      error_message = "the home VPC's DynamoDB interface endpoint's first DNS entry is not its Regional endpoint-specific name."
    }
  }
}

data "aws_security_group" "home_dynamodb_endpoint" {
  count = local.shares_home_vpc ? 1 : 0

  vpc_id = local.network.vpc_id
  tags = {
    Service   = "idgen"
    Component = "dynamodb-endpoint"
  }
}

locals {
  # The region's fleets: its pinned image and each fleet's capacity.
  fleets = var.fleets[local.region]
  # What the hosts need at boot that this root makes: the VPC's endpoints (none in the home VPC,
  # whose endpoints the registry root made before).
  boot_dependencies = local.shares_home_vpc ? [] : module.endpoints[0].boot_dependency_ids
}

locals {
  # This region's DynamoDB interface endpoint: its URL (this root's output, which the other roots
  # are given in public_id_dynamodb_endpoints) and its security group.
  dynamodb_endpoint                   = local.shares_home_vpc ? "https://${data.aws_vpc_endpoint.home_dynamodb[0].dns_entry[0].dns_name}" : module.endpoints[0].dynamodb_endpoint_url
  dynamodb_endpoint_security_group_id = local.shares_home_vpc ? data.aws_security_group.home_dynamodb_endpoint[0].id : module.endpoints[0].dynamodb_security_group_id
}

module "region" {
  source = "../../../modules/region"

  region   = local.region
  number   = module.topology.regions[local.region].number
  peer     = module.topology.regions[local.region].peer
  endpoint = module.topology.regions[local.region].endpoint
  schedule = var.schedule

  registry_url   = module.topology.registry_url
  registry_cidrs = [var.networks[local.home].vpc_cidr]

  vpc_id                = local.network.vpc_id
  vpc_cidr              = local.network.vpc_cidr
  subnet_ids            = local.network.subnet_ids
  caller_cidrs          = local.network.caller_cidrs
  failover_caller_cidrs = local.failover_callers
  zone_id               = data.aws_route53_zone.endpoints.zone_id

  endpoints_security_group_id = local.shares_home_vpc ? data.aws_security_group.home_endpoints[0].id : module.endpoints[0].security_group_id

  artifact_s3_uri  = "${local.release}/bin/generator"
  callers_s3_uri   = "${local.release}/callers/generator.json"
  tls_cert_s3_uri  = "${local.tls}/${local.region}.crt"
  tls_key_s3_uri   = "${local.tls}/${local.region}.key"
  client_ca_s3_uri = "${local.tls}/client-ca.pem"
  s3_kms_key_arn   = local.s3_kms_key

  alarm_actions = lookup(var.alarm_actions, local.region, [])

  # The region's pinned image and the fleet's capacity (live/idgen.tfvars: fleets); the group
  # waits for the VPC's endpoints this root makes, and its quota check counts the region's
  # other fleets (the public-ID programs', and what vcpus_elsewhere names: the registry's in the
  # home region).
  ami_id                = local.fleets.ami_id
  capacity              = local.fleets.generator
  boot_dependencies     = local.boot_dependencies
  quota_vcpus_elsewhere = module.public_id.vcpus_at_max + lookup(var.vcpus_elsewhere, local.region, 0)
}

################################################################################
# Public IDs: the store of record, the regional Redis, the internal API and the customer gateway
################################################################################

# The customer hostname's certificate in this region (ACM, issued before the first apply).
data "aws_acm_certificate" "customer" {
  domain      = var.customer_hostname
  statuses    = ["ISSUED"]
  most_recent = true
}

module "public_id" {
  source = "../../../modules/public-id"

  region  = local.region
  regions = module.topology.regions
  # Every region's table at its DynamoDB interface endpoint: the other regions' from their roots'
  # outputs (null while a region's root is not applied), this region's from this root.
  dynamodb_endpoints = merge(var.public_id_dynamodb_endpoints, { (local.region) = local.dynamodb_endpoint })
  dns_name           = "public-id.${local.region}.${var.endpoint_domain}"
  zone_id            = data.aws_route53_zone.endpoints.zone_id

  vpc_id                = local.network.vpc_id
  vpc_cidr              = local.network.vpc_cidr
  subnet_ids            = local.network.subnet_ids
  public_subnet_ids     = local.network.public_subnet_ids
  caller_cidrs          = local.network.caller_cidrs
  failover_caller_cidrs = local.failover_callers
  peer_vpc_cidrs        = local.other_vpcs

  endpoints_security_group_id         = local.shares_home_vpc ? data.aws_security_group.home_endpoints[0].id : module.endpoints[0].security_group_id
  dynamodb_endpoint_security_group_id = local.dynamodb_endpoint_security_group_id
  gateway_upstreams                   = lookup(var.gateway_upstreams, local.region, [])
  certificate_arn                     = data.aws_acm_certificate.customer.arn
  redis_auth_parameter                = "/idgen/${local.region}/public-id/redis-auth"

  public_id_artifact_s3_uri = "${local.release}/bin/public-id"
  gateway_artifact_s3_uri   = "${local.release}/bin/public-id-gateway"
  callers_s3_uri            = "${local.release}/callers/public-id.json"
  routes_s3_uri             = "${local.release}/routes/gateway.json"
  tls_cert_s3_uri           = "${local.tls}/public-id.${local.region}.crt"
  tls_key_s3_uri            = "${local.tls}/public-id.${local.region}.key"
  client_ca_s3_uri          = "${local.tls}/client-ca.pem"
  s3_kms_key_arn            = local.s3_kms_key

  alarm_actions = lookup(var.alarm_actions, local.region, [])

  ami_id                = local.fleets.ami_id
  public_id_capacity    = local.fleets.public_id
  gateway_capacity      = local.fleets.gateway
  boot_dependencies     = local.boot_dependencies
  quota_vcpus_elsewhere = lookup(var.vcpus_elsewhere, local.region, 0)
}

# This region's latency record of the customer hostname, in the public zone.
data "aws_route53_zone" "customer" {
  name         = var.customer_zone
  private_zone = false

  lifecycle {
    # The customer hostname's records go in this zone: the hostname must be a name in it.
    postcondition {
      condition     = !self.private_zone && (var.customer_hostname == trimsuffix(self.name, ".") || endswith(var.customer_hostname, ".${trimsuffix(self.name, ".")}"))
      error_message = "customer_hostname ${var.customer_hostname} is not a name in the public zone ${self.name} (${self.zone_id}): give customer_zone the zone that holds it."
    }
  }
}

module "customer_dns" {
  source = "../../../modules/customer-dns"

  region      = local.region
  zone_id     = data.aws_route53_zone.customer.zone_id
  hostname    = var.customer_hostname
  lb_dns_name = module.public_id.lb_dns_name
  lb_zone_id  = module.public_id.lb_zone_id
}
