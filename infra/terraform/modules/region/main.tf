data "aws_region" "current" {}

locals {
  name     = "idgen-${var.region}"
  host     = regex("^https://([^:/]+)", var.endpoint)[0]
  dynamodb = "https://dynamodb.${var.region}.amazonaws.com"

  tags = merge(var.tags, {
    Service = "idgen"
    Region  = var.region
  })

  # The one source of alert thresholds, shared with the Prometheus alert rules: per alert a
  # threshold and a for-duration ("5m"), which CloudWatch evaluates as that many 1-minute periods.
  alert_doc  = jsondecode(file("${path.module}/../../../../deploy/alert-thresholds.json"))
  thresholds = { for a in local.alert_doc.alerts : a.name => a }
  # Each alarm's description: what it means, and its runbook as a link that opens from the console.
  alarm_descriptions = { for name, a in local.thresholds : name => "${a.meaning} Runbook: ${local.alert_doc.runbook_base}runbooks/alerts/${name}.md" }
  for_minutes = {
    for name, a in local.thresholds : name => max(1, ceil(
      tonumber(regex("^([0-9]+)[smh]$", a.for)[0]) * { s = 1, m = 60, h = 3600 }[regex("[smh]$", a.for)] / 60
    ))
  }

  operators = {
    for name, a in local.thresholds : name => a.comparison == "below" ? "LessThanThreshold" : "GreaterThanThreshold"
  }

  # The lease table's operations the generators call (dynamolease.GeneratorActions less
  # DescribeTable, which CloudWatch does not report per operation).
  lease_operations = ["GetItem", "PutItem", "UpdateItem"]
}

################################################################################
# Lease and history tables: region-local, never global tables
################################################################################

resource "aws_dynamodb_table" "lease" {
  name                        = "idgen-leases-v2"
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

resource "aws_dynamodb_table" "history" {
  name                        = "idgen-lease-history"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "machine_id"
  range_key                   = "at"
  deletion_protection_enabled = true

  attribute {
    name = "machine_id"
    type = "N"
  }

  attribute {
    name = "at"
    type = "N"
  }

  ttl {
    attribute_name = "expires_at"
    enabled        = true
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
  }
}

################################################################################
# The generators' grants: the driver's actions on this region's two tables, nothing else
################################################################################

data "aws_iam_policy_document" "tables" {
  statement {
    sid     = "LeaseAndHistory"
    actions = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
    resources = [
      aws_dynamodb_table.lease.arn,
      aws_dynamodb_table.history.arn,
    ]
  }
}

################################################################################
# The generator fleet
################################################################################

module "fleet" {
  source = "../fleet"

  name    = local.name
  service = "generator"
  region  = var.region

  service_args = concat([
    "--listen", "0.0.0.0:443",
    "--health-listen", "0.0.0.0:${var.health_port}",
    "--region", var.region,
    "--region-number", tostring(var.number),
    "--registry", var.registry_url,
    "--lease-store", "dynamodb:${local.dynamodb}",
    "--range", "service",
    "--schedule", var.schedule,
    "--clock-check", "strict",
    "--callers", "/etc/idgen/callers.json",
    "--tls-cert", "/etc/idgen/tls.crt",
    "--tls-key", "/etc/idgen/tls.key",
    "--client-ca", "/etc/idgen/client-ca.pem",
  ])

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
  policy_json    = data.aws_iam_policy_document.tables.json

  vpc_id       = var.vpc_id
  vpc_cidr     = var.vpc_cidr
  subnet_ids   = var.subnet_ids
  caller_cidrs = distinct(concat(var.caller_cidrs, var.failover_caller_cidrs))
  service_port = 443
  health_port  = var.health_port

  # Out: the AWS APIs through the VPC's endpoints, and the registry.
  endpoints_security_group_id = var.endpoints_security_group_id
  peer_cidrs                  = var.registry_cidrs

  instance_type = var.instance_type
  ami_id        = var.ami_id
  capacity      = var.capacity

  # What the hosts need at boot, made outside this module (the VPC's endpoints), and the
  # region's other fleets that share the vCPU quota.
  boot_dependencies     = var.boot_dependencies
  quota_vcpus_elsewhere = var.quota_vcpus_elsewhere

  # An instance refresh rolls back when the fleet loses healthy hosts or gains unhealthy ones.
  refresh_alarms = [
    aws_cloudwatch_metric_alarm.fleet_healthy_hosts.alarm_name,
    aws_cloudwatch_metric_alarm.nlb_unhealthy_hosts.alarm_name,
  ]

  target_group_name = "idgen-workers"
  zone_id           = var.zone_id
  dns_name          = local.host

  tags = merge(local.tags, { Peer = var.peer })
}

################################################################################
# Alarms (thresholds from deploy/alert-thresholds.json)
################################################################################

resource "aws_cloudwatch_metric_alarm" "fleet_healthy_hosts" {
  alarm_name          = "idgen-${var.region}-fleet-healthy-hosts-low"
  alarm_description   = local.alarm_descriptions["IdgenFleetHealthyHostsLow"]
  namespace           = "AWS/NetworkELB"
  metric_name         = "HealthyHostCount"
  statistic           = "Minimum"
  period              = 60
  evaluation_periods  = local.for_minutes["IdgenFleetHealthyHostsLow"]
  datapoints_to_alarm = local.for_minutes["IdgenFleetHealthyHostsLow"]
  comparison_operator = local.operators["IdgenFleetHealthyHostsLow"]
  threshold           = local.thresholds["IdgenFleetHealthyHostsLow"].threshold
  treat_missing_data  = "breaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions

  dimensions = {
    LoadBalancer = module.fleet.lb_arn_suffix
    TargetGroup  = module.fleet.target_group_arn_suffix
  }

  tags = local.tags
}

resource "aws_cloudwatch_metric_alarm" "nlb_unhealthy_hosts" {
  alarm_name          = "idgen-${var.region}-nlb-unhealthy-hosts"
  alarm_description   = local.alarm_descriptions["IdgenNLBUnhealthyHosts"]
  namespace           = "AWS/NetworkELB"
  metric_name         = "UnHealthyHostCount"
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = local.for_minutes["IdgenNLBUnhealthyHosts"]
  datapoints_to_alarm = local.for_minutes["IdgenNLBUnhealthyHosts"]
  comparison_operator = local.operators["IdgenNLBUnhealthyHosts"]
  threshold           = local.thresholds["IdgenNLBUnhealthyHosts"].threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions

  dimensions = {
    LoadBalancer = module.fleet.lb_arn_suffix
    TargetGroup  = module.fleet.target_group_arn_suffix
  }

  tags = local.tags
}

resource "aws_cloudwatch_metric_alarm" "lease_throttles" {
  alarm_name          = "idgen-${var.region}-lease-table-throttles"
  alarm_description   = local.alarm_descriptions["IdgenLeaseTableThrottled"]
  evaluation_periods  = local.for_minutes["IdgenLeaseTableThrottled"]
  datapoints_to_alarm = local.for_minutes["IdgenLeaseTableThrottled"]
  comparison_operator = local.operators["IdgenLeaseTableThrottled"]
  threshold           = local.thresholds["IdgenLeaseTableThrottled"].threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions

  metric_query {
    id          = "total"
    expression  = join(" + ", [for op in local.lease_operations : "FILL(${lower(op)}, 0)"])
    label       = "Throttled requests on ${aws_dynamodb_table.lease.name}"
    return_data = true
  }

  dynamic "metric_query" {
    for_each = toset(local.lease_operations)

    content {
      id = lower(metric_query.value)

      metric {
        namespace   = "AWS/DynamoDB"
        metric_name = "ThrottledRequests"
        stat        = "Sum"
        period      = 60
        dimensions = {
          TableName = aws_dynamodb_table.lease.name
          Operation = metric_query.value
        }
      }
    }
  }

  tags = local.tags
}

resource "aws_cloudwatch_metric_alarm" "lease_system_errors" {
  alarm_name          = "idgen-${var.region}-lease-table-system-errors"
  alarm_description   = local.alarm_descriptions["IdgenLeaseTableSystemErrors"]
  evaluation_periods  = local.for_minutes["IdgenLeaseTableSystemErrors"]
  datapoints_to_alarm = local.for_minutes["IdgenLeaseTableSystemErrors"]
  comparison_operator = local.operators["IdgenLeaseTableSystemErrors"]
  threshold           = local.thresholds["IdgenLeaseTableSystemErrors"].threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions

  metric_query {
    id          = "total"
    expression  = join(" + ", [for op in local.lease_operations : "FILL(${lower(op)}, 0)"])
    label       = "System errors on ${aws_dynamodb_table.lease.name}"
    return_data = true
  }

  dynamic "metric_query" {
    for_each = toset(local.lease_operations)

    content {
      id = lower(metric_query.value)

      metric {
        namespace   = "AWS/DynamoDB"
        metric_name = "SystemErrors"
        stat        = "Sum"
        period      = 60
        dimensions = {
          TableName = aws_dynamodb_table.lease.name
          Operation = metric_query.value
        }
      }
    }
  }

  tags = local.tags
}
