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
    "--health-listen", "0.0.0.0:${var.health_port}",
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
  # The load balancer checks /healthz over HTTP on the plaintext health port (443 asks every
  # connection for a client certificate, which the checks do not have): 503 once the server
  # certificate in use has expired, when the table does not answer, and from the start of a
  # drain, so it routes only to registries its callers can use.
  health_port = var.health_port

  # Out: the AWS APIs through the VPC's endpoints only; the registry calls no peer.
  endpoints_security_group_id = var.endpoints_security_group_id

  instance_type = var.instance_type
  ami_id        = var.ami_id
  capacity      = var.capacity

  boot_dependencies     = var.boot_dependencies
  quota_vcpus_elsewhere = var.quota_vcpus_elsewhere
  refresh_alarms        = [aws_cloudwatch_metric_alarm.unhealthy_hosts.alarm_name]
  # Two hosts: a refresh replaces one, waits, then the other.
  refresh_checkpoints = [50, 100]

  target_group_name = "idgen-registry"
  zone_id           = var.zone_id
  dns_name          = var.dns_name

  tags = local.tags

  # The hosts' collectors (modules/fleet/monitoring.tf).
  monitoring = var.monitoring
}

################################################################################
# Alarms (thresholds from deploy/alert-thresholds.json): the instance refresh's gate too
################################################################################

locals {
  alert_doc          = jsondecode(file("${path.module}/../../../../deploy/alert-thresholds.json"))
  thresholds         = { for a in local.alert_doc.alerts : a.name => a }
  alarm_descriptions = { for name, a in local.thresholds : name => "${a.meaning} Runbook: ${local.alert_doc.runbook_base}runbooks/alerts/${name}.md" }
  for_minutes = {
    for name, a in local.thresholds : name => max(1, ceil(
      tonumber(regex("^([0-9]+)[smh]$", a.for)[0]) * { s = 1, m = 60, h = 3600 }[regex("[smh]$", a.for)] / 60
    ))
  }
  operators = {
    for name, a in local.thresholds : name => a.comparison == "below" ? "LessThanThreshold" : "GreaterThanThreshold"
  }
}
