data "aws_region" "current" {}

locals {
  tags = merge(var.tags, { Service = "idgen" })
}

################################################################################
# The registry table: regions (numbers never reused), the layout schedule, the audit log
################################################################################

resource "aws_dynamodb_table" "this" {
  name                        = "idgen-regions"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  deletion_protection_enabled = true

  attribute {
    name = "pk"
    type = "S"
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled     = true
    kms_key_arn = var.table_kms_key_arn
  }

  tags = local.tags

  lifecycle {
    prevent_destroy = true

    precondition {
      condition     = data.aws_region.current.name == var.region
      error_message = "the aws provider given to this module is in ${data.aws_region.current.name}, not ${var.region}."
    }
  }
}

################################################################################
# The registry service's grants: the driver's actions on its table, nothing else
################################################################################

data "aws_iam_policy_document" "table" {
  statement {
    sid       = "Registry"
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Scan", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.this.arn]
  }
}

################################################################################
# The registry service
################################################################################

module "fleet" {
  source = "../fleet"

  name    = "idgen-registry"
  service = "registry"
  region  = var.region

  service_args = [
    "--listen", "0.0.0.0:443",
    "--region", var.region,
    "--store", "dynamodb:https://dynamodb.${var.region}.amazonaws.com",
    "--schedule", var.schedule,
    "--callers", "/etc/idgen/callers.json",
    "--tls-cert", "/etc/idgen/tls.crt",
    "--tls-key", "/etc/idgen/tls.key",
    "--client-ca", "/etc/idgen/client-ca.pem",
  ]

  artifact_s3_uri = var.artifact_s3_uri
  config_files = {
    "callers.json" = var.callers_s3_uri
  }
  certificate_files = {
    "tls.crt"       = var.tls_cert_s3_uri
    "tls.key"       = var.tls_key_s3_uri
    "client-ca.pem" = var.client_ca_s3_uri
  }
  s3_kms_key_arn = var.s3_kms_key_arn
  policy_json    = data.aws_iam_policy_document.table.json

  vpc_id       = var.vpc_id
  vpc_cidr     = var.vpc_cidr
  subnet_ids   = var.subnet_ids
  caller_cidrs = var.caller_cidrs
  service_port = 443
  # The registry has no plaintext health port: the load balancer checks TCP on 443.
  health_port = null

  # Out: the AWS APIs through the VPC's endpoints only; the registry calls no peer.
  endpoints_security_group_id = var.endpoints_security_group_id

  instance_type  = var.instance_type
  instance_count = var.instance_count

  target_group_name = "idgen-registry"
  zone_id           = var.zone_id
  dns_name          = var.dns_name

  tags = local.tags

  # The hosts' collectors (modules/fleet/monitoring.tf).
  monitoring = var.monitoring
}
