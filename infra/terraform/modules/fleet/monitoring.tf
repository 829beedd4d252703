# The hosts' collectors, when the fleet is given monitoring (modules/monitoring's collector output):
# Prometheus in agent mode scrapes the service's /metrics on the host and remote-writes it to the
# region's Amazon Managed Service for Prometheus workspace (SigV4, through the VPC's aps-workspaces
# endpoint), where the alert rules are evaluated; the CloudWatch agent ships the service's journal
# (and the boot log) to the log group /idgen/<region>/<service>. Both binaries come from the
# region's copy of the release, like the service's: the hosts have no way to the internet. Their
# setup script (collector-setup.sh.tftpl) is kept in SSM Parameter Store, /idgen/collector/<name>;
# the boot step rendered from collector.sh.tftpl into the user data reads it and runs it after the
# service has started (with the boot script's retry on every AWS call), and a collector that fails
# to start leaves the service running. A changed script reaches the hosts that boot after it.
#
# The scrape: job idgen-<service> (the jobs of the rules and of scripts/observe.sh), the target
# labelled with the region and instance = the host's instance ID (as the runbooks name hosts), and
# honor_labels, so that every series keeps the region label the service gives it. On the
# mutual-TLS port, the server certificate is not checked (127.0.0.1 is not the name it is for):
# the client certificate is what the service checks. The scraper's certificate is fetched again
# daily by idgen-scraper-cert.timer (Prometheus reads it for each new connection).

variable "monitoring" {
  description = "The region's monitoring (modules/monitoring's collector output): the workspace to remote-write to, the S3 URIs of the collectors' binaries and of the scraper's client certificate and key, and the log groups' KMS key and retention. null: no collector and no log group."
  type = object({
    region                  = string
    workspace_arn           = string
    remote_write_url        = string
    prometheus_s3_uri       = string
    cloudwatch_agent_s3_uri = string
    scraper_cert_s3_uri     = string
    scraper_key_s3_uri      = string
    log_kms_key_arn         = optional(string)
    log_retention_days      = optional(number, 90)
  })
  default = null
}

locals {
  collector = var.monitoring != null

  # The service's log group: one per service and region.
  log_group_name = "/idgen/${var.region}/${var.service}"

  # What the collector scrapes: the plaintext health port where the service has one (the
  # generators' --health-listen, the gateway's --metrics-listen); otherwise /metrics on the
  # service's mutual-TLS port, with the scraper's client certificate.
  scrape_tls    = var.health_port == null
  scrape_port   = coalesce(var.health_port, var.service_port)
  scraper_files = local.scrape_tls ? { "scraper.crt" = try(var.monitoring.scraper_cert_s3_uri, null), "scraper.key" = try(var.monitoring.scraper_key_s3_uri, null) } : {}

  # The CloudWatch agent's configuration: the journal of the service and of the host's idgen units,
  # and cloud-init's log of the boot, one stream per host.
  cloudwatch_agent_config = jsonencode({
    agent = { region = var.region, run_as_user = "root" }
    logs = {
      logs_collected = {
        journald = {
          collect_list = [{
            log_group_name  = local.log_group_name
            log_stream_name = "{instance_id}"
            units           = ["${local.unit}.service", "idgen-cert-refresh.service", "idgen-prometheus-agent.service"]
          }]
        }
        files = {
          collect_list = [{
            file_path       = "/var/log/cloud-init-output.log"
            log_group_name  = local.log_group_name
            log_stream_name = "{instance_id}/boot"
          }]
        }
      }
    }
  })

  # The setup script, kept in SSM Parameter Store (it does not fit EC2's 16 KB of user data beside
  # the rest), and the boot step that reads and runs it.
  collector_parameter = "/idgen/collector/${var.name}"
  collector_setup = var.monitoring == null ? "" : templatefile("${path.module}/collector-setup.sh.tftpl", {
    service          = var.service
    unit             = local.unit
    region           = var.region
    job              = "idgen-${var.service}"
    scrape_tls       = local.scrape_tls
    scrape_port      = local.scrape_port
    scraper_files    = local.scraper_files
    remote_write_url = var.monitoring.remote_write_url
    prometheus_uri   = var.monitoring.prometheus_s3_uri
    cwagent_uri      = var.monitoring.cloudwatch_agent_s3_uri
    cwagent_config   = local.cloudwatch_agent_config
  })
  collector_script = var.monitoring == null ? "" : templatefile("${path.module}/collector.sh.tftpl", {
    region    = var.region
    parameter = aws_ssm_parameter.collector[0].name
  })
}

resource "aws_ssm_parameter" "collector" {
  count = local.collector ? 1 : 0

  name        = local.collector_parameter
  description = "idgen ${var.service} (${var.name}): the collectors' setup script, which every host runs at boot."
  type        = "String"
  # Standard parameters hold 4 KB; the script of a fleet scraping over mutual TLS is longer.
  tier  = length(local.collector_setup) > 4096 ? "Advanced" : "Standard"
  value = local.collector_setup
  tags  = local.tags
}

resource "aws_cloudwatch_log_group" "service" {
  count = local.collector ? 1 : 0

  name              = local.log_group_name
  retention_in_days = var.monitoring.log_retention_days
  kms_key_id        = var.monitoring.log_kms_key_arn
  tags              = local.tags

  lifecycle {
    precondition {
      condition     = var.monitoring.region == var.region
      error_message = "monitoring is ${var.monitoring.region}'s, the fleet is in ${var.region}: each region's hosts write to their own region's workspace, through their VPC's endpoint."
    }
  }
}

# The collectors' grants: remote write to the region's workspace, the service's log group, and the
# collectors' objects in S3; nothing else.
data "aws_iam_policy_document" "collector" {
  # No statement without monitoring (and no role policy then, below).
  dynamic "statement" {
    for_each = local.collector ? [var.monitoring.workspace_arn] : []

    content {
      sid       = "RemoteWrite"
      actions   = ["aps:RemoteWrite"]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = local.collector ? aws_cloudwatch_log_group.service[*].arn : []

    content {
      sid       = "ServiceLogs"
      actions   = ["logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"]
      resources = [statement.value, "${statement.value}:log-stream:*"]
    }
  }

  dynamic "statement" {
    for_each = local.collector ? aws_ssm_parameter.collector[*].arn : []

    content {
      sid       = "CollectorSetup"
      actions   = ["ssm:GetParameter"]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = local.collector ? [concat([var.monitoring.prometheus_s3_uri, var.monitoring.cloudwatch_agent_s3_uri], values(local.scraper_files))] : []

    content {
      sid       = "CollectorObjects"
      actions   = ["s3:GetObject"]
      resources = [for u in statement.value : "arn:${data.aws_partition.current.partition}:s3:::${trimprefix(u, "s3://")}"]
    }
  }
}

resource "aws_iam_role_policy" "collector" {
  count = local.collector ? 1 : 0

  name   = "collector"
  role   = aws_iam_role.this.id
  policy = data.aws_iam_policy_document.collector.json
}
