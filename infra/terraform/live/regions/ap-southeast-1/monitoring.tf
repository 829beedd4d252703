# This region's monitoring (modules/monitoring): the Prometheus workspace its hosts' collectors
# write to (with idgen's alert rules and an alert manager), and the alarm topic that every alarm of
# this root and every alert of the workspace notifies, with its subscriptions.

variable "alarm_subscriptions" {
  description = "Per region name, the subscriptions (protocol and endpoint) of the region's alarm topic idgen-<region>-alarms, which every CloudWatch alarm and Prometheus alert of the region notifies; the registry root's topic idgen-registry-alarms takes the home region's entry."
  type = map(list(object({
    protocol = string
    endpoint = string
  })))
  default = {}
}

variable "log_retention_days" {
  description = "Days CloudWatch Logs keeps the hosts' logs (/idgen/<region>/<service>) and the Prometheus workspaces' logs."
  type        = number
  default     = 90
}

module "monitoring" {
  source = "../../../modules/monitoring"

  name                = "idgen-${local.region}"
  region              = local.region
  alarm_subscriptions = lookup(var.alarm_subscriptions, local.region, [])
  log_retention_days  = var.log_retention_days

  # The collectors, from this region's copy of the release; the scraper's client certificate from
  # the renewable place of the certificates.
  prometheus_s3_uri       = "${local.release}/bin/prometheus"
  cloudwatch_agent_s3_uri = "${local.release}/bin/amazon-cloudwatch-agent.rpm"
  scraper_cert_s3_uri     = "${local.tls}/scraper.crt"
  scraper_key_s3_uri      = "${local.tls}/scraper.key"
}

locals {
  # Every alarm of this root notifies the region's alarm topic, and the topics of alarm_actions.
  alarm_actions = distinct(concat([module.monitoring.alarm_topic_arn], lookup(var.alarm_actions, local.region, [])))
}

output "alarm_topic_arn" {
  description = "ARN of this region's alarm topic (idgen-<region>-alarms): every alarm of this root and every alert of its Prometheus workspace notifies it."
  value       = module.monitoring.alarm_topic_arn
}

output "prometheus_workspace_id" {
  description = "ID of this region's Amazon Managed Service for Prometheus workspace (alias idgen-<region>)."
  value       = module.monitoring.workspace_id
}

output "prometheus_query_url" {
  description = "Query API of this region's Prometheus workspace (SigV4, service aps): awscurl or Grafana's data source."
  value       = module.monitoring.query_url
}
