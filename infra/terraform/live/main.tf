# The five idgen regions and the registry. module.topology is the one source of region numbers,
# peers and endpoints; every region below takes its own from it.

module "topology" {
  source = "../modules/topology"

  endpoint_domain = var.endpoint_domain
}

locals {
  # The release's objects under artifacts_s3_prefix (see the README).
  release = {
    generator         = "${var.artifacts_s3_prefix}/bin/generator"
    registry          = "${var.artifacts_s3_prefix}/bin/registry"
    client_ca         = "${var.artifacts_s3_prefix}/client-ca.pem"
    generator_callers = "${var.artifacts_s3_prefix}/callers/generator.json"
    registry_callers  = "${var.artifacts_s3_prefix}/callers/registry.json"
  }

  # Per region, the callers that fail over to it: those of every region whose peer it is. Its
  # security group admits them beside its own callers.
  failover_callers = {
    for name in keys(module.topology.regions) : name => distinct(flatten([
      for other, r in module.topology.regions : var.networks[other].caller_cidrs if r.peer == name
    ]))
  }

  # Every region's generators read the registry at start-up.
  registry_callers = distinct(concat([for n in values(var.networks) : n.vpc_cidr], var.operator_cidrs))
}

################################################################################
# The private zone of the endpoints, visible from every region's VPC
################################################################################

resource "aws_route53_zone" "this" {
  provider = aws.us_east_1

  name    = var.endpoint_domain
  comment = "idgen endpoints: generators per region and the registry"

  dynamic "vpc" {
    for_each = var.networks

    content {
      vpc_id     = vpc.value.vpc_id
      vpc_region = vpc.key
    }
  }

  lifecycle {
    precondition {
      condition     = length(setsubtract(keys(module.topology.regions), keys(var.networks))) == 0
      error_message = "networks has no entry for: ${join(", ", setsubtract(keys(module.topology.regions), keys(var.networks)))}."
    }
  }
}

################################################################################
# Registry (home region): applied first, the generators read it at start-up
################################################################################

module "registry" {
  source = "../modules/registry"
  providers = {
    aws = aws.us_east_1
  }

  schedule     = var.schedule
  vpc_id       = var.networks["us-east-1"].vpc_id
  vpc_cidr     = var.networks["us-east-1"].vpc_cidr
  subnet_ids   = var.networks["us-east-1"].subnet_ids
  caller_cidrs = local.registry_callers
  zone_id      = aws_route53_zone.this.zone_id
  dns_name     = "registry.${var.endpoint_domain}"

  artifact_s3_uri  = local.release.registry
  tls_cert_s3_uri  = "${var.artifacts_s3_prefix}/tls/registry.crt"
  tls_key_s3_uri   = "${var.artifacts_s3_prefix}/tls/registry.key"
  client_ca_s3_uri = local.release.client_ca
  callers_s3_uri   = local.release.registry_callers
  s3_kms_key_arn   = var.s3_kms_key_arn
}

################################################################################
# The v1 lease table: one, in the home region, only while the schedule is v1-v2
################################################################################

resource "aws_dynamodb_table" "v1" {
  count    = var.schedule == "v1-v2" ? 1 : 0
  provider = aws.us_east_1

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

################################################################################
# us-east-1
################################################################################

module "region_us_east_1" {
  source = "../modules/region"
  providers = {
    aws = aws.us_east_1
  }

  region   = "us-east-1"
  number   = module.topology.regions["us-east-1"].number
  peer     = module.topology.regions["us-east-1"].peer
  endpoint = module.topology.regions["us-east-1"].endpoint
  schedule = var.schedule

  registry_url = module.registry.url

  vpc_id                = var.networks["us-east-1"].vpc_id
  vpc_cidr              = var.networks["us-east-1"].vpc_cidr
  subnet_ids            = var.networks["us-east-1"].subnet_ids
  caller_cidrs          = var.networks["us-east-1"].caller_cidrs
  failover_caller_cidrs = local.failover_callers["us-east-1"]
  zone_id               = aws_route53_zone.this.zone_id

  artifact_s3_uri  = local.release.generator
  tls_cert_s3_uri  = "${var.artifacts_s3_prefix}/tls/us-east-1.crt"
  tls_key_s3_uri   = "${var.artifacts_s3_prefix}/tls/us-east-1.key"
  client_ca_s3_uri = local.release.client_ca
  callers_s3_uri   = local.release.generator_callers
  s3_kms_key_arn   = var.s3_kms_key_arn

  alarm_actions = lookup(var.alarm_actions, "us-east-1", [])

  depends_on = [module.registry]
}

################################################################################
# us-west-2
################################################################################

module "region_us_west_2" {
  source = "../modules/region"
  providers = {
    aws = aws.us_west_2
  }

  region   = "us-west-2"
  number   = module.topology.regions["us-west-2"].number
  peer     = module.topology.regions["us-west-2"].peer
  endpoint = module.topology.regions["us-west-2"].endpoint
  schedule = var.schedule

  registry_url = module.registry.url

  vpc_id                = var.networks["us-west-2"].vpc_id
  vpc_cidr              = var.networks["us-west-2"].vpc_cidr
  subnet_ids            = var.networks["us-west-2"].subnet_ids
  caller_cidrs          = var.networks["us-west-2"].caller_cidrs
  failover_caller_cidrs = local.failover_callers["us-west-2"]
  zone_id               = aws_route53_zone.this.zone_id

  artifact_s3_uri  = local.release.generator
  tls_cert_s3_uri  = "${var.artifacts_s3_prefix}/tls/us-west-2.crt"
  tls_key_s3_uri   = "${var.artifacts_s3_prefix}/tls/us-west-2.key"
  client_ca_s3_uri = local.release.client_ca
  callers_s3_uri   = local.release.generator_callers
  s3_kms_key_arn   = var.s3_kms_key_arn

  alarm_actions = lookup(var.alarm_actions, "us-west-2", [])

  depends_on = [module.registry]
}

################################################################################
# eu-west-1
################################################################################

module "region_eu_west_1" {
  source = "../modules/region"
  providers = {
    aws = aws.eu_west_1
  }

  region   = "eu-west-1"
  number   = module.topology.regions["eu-west-1"].number
  peer     = module.topology.regions["eu-west-1"].peer
  endpoint = module.topology.regions["eu-west-1"].endpoint
  schedule = var.schedule

  registry_url = module.registry.url

  vpc_id                = var.networks["eu-west-1"].vpc_id
  vpc_cidr              = var.networks["eu-west-1"].vpc_cidr
  subnet_ids            = var.networks["eu-west-1"].subnet_ids
  caller_cidrs          = var.networks["eu-west-1"].caller_cidrs
  failover_caller_cidrs = local.failover_callers["eu-west-1"]
  zone_id               = aws_route53_zone.this.zone_id

  artifact_s3_uri  = local.release.generator
  tls_cert_s3_uri  = "${var.artifacts_s3_prefix}/tls/eu-west-1.crt"
  tls_key_s3_uri   = "${var.artifacts_s3_prefix}/tls/eu-west-1.key"
  client_ca_s3_uri = local.release.client_ca
  callers_s3_uri   = local.release.generator_callers
  s3_kms_key_arn   = var.s3_kms_key_arn

  alarm_actions = lookup(var.alarm_actions, "eu-west-1", [])

  depends_on = [module.registry]
}

################################################################################
# ap-northeast-1
################################################################################

module "region_ap_northeast_1" {
  source = "../modules/region"
  providers = {
    aws = aws.ap_northeast_1
  }

  region   = "ap-northeast-1"
  number   = module.topology.regions["ap-northeast-1"].number
  peer     = module.topology.regions["ap-northeast-1"].peer
  endpoint = module.topology.regions["ap-northeast-1"].endpoint
  schedule = var.schedule

  registry_url = module.registry.url

  vpc_id                = var.networks["ap-northeast-1"].vpc_id
  vpc_cidr              = var.networks["ap-northeast-1"].vpc_cidr
  subnet_ids            = var.networks["ap-northeast-1"].subnet_ids
  caller_cidrs          = var.networks["ap-northeast-1"].caller_cidrs
  failover_caller_cidrs = local.failover_callers["ap-northeast-1"]
  zone_id               = aws_route53_zone.this.zone_id

  artifact_s3_uri  = local.release.generator
  tls_cert_s3_uri  = "${var.artifacts_s3_prefix}/tls/ap-northeast-1.crt"
  tls_key_s3_uri   = "${var.artifacts_s3_prefix}/tls/ap-northeast-1.key"
  client_ca_s3_uri = local.release.client_ca
  callers_s3_uri   = local.release.generator_callers
  s3_kms_key_arn   = var.s3_kms_key_arn

  alarm_actions = lookup(var.alarm_actions, "ap-northeast-1", [])

  depends_on = [module.registry]
}

################################################################################
# ap-southeast-1
################################################################################

module "region_ap_southeast_1" {
  source = "../modules/region"
  providers = {
    aws = aws.ap_southeast_1
  }

  region   = "ap-southeast-1"
  number   = module.topology.regions["ap-southeast-1"].number
  peer     = module.topology.regions["ap-southeast-1"].peer
  endpoint = module.topology.regions["ap-southeast-1"].endpoint
  schedule = var.schedule

  registry_url = module.registry.url

  vpc_id                = var.networks["ap-southeast-1"].vpc_id
  vpc_cidr              = var.networks["ap-southeast-1"].vpc_cidr
  subnet_ids            = var.networks["ap-southeast-1"].subnet_ids
  caller_cidrs          = var.networks["ap-southeast-1"].caller_cidrs
  failover_caller_cidrs = local.failover_callers["ap-southeast-1"]
  zone_id               = aws_route53_zone.this.zone_id

  artifact_s3_uri  = local.release.generator
  tls_cert_s3_uri  = "${var.artifacts_s3_prefix}/tls/ap-southeast-1.crt"
  tls_key_s3_uri   = "${var.artifacts_s3_prefix}/tls/ap-southeast-1.key"
  client_ca_s3_uri = local.release.client_ca
  callers_s3_uri   = local.release.generator_callers
  s3_kms_key_arn   = var.s3_kms_key_arn

  alarm_actions = lookup(var.alarm_actions, "ap-southeast-1", [])

  depends_on = [module.registry]
}
