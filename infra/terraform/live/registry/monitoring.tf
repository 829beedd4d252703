# The registry's monitoring (modules/monitoring), in the home region: the Prometheus workspace
# idgen-registry its hosts' collectors write to (with idgen's alert rules and an alert manager),
# and the alarm topic idgen-registry-alarms that the registry's alarms and alerts notify. A
# workspace of its own: this root is applied before any region root, and its state is its own.

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
  source = "../../modules/monitoring"

  name                = "idgen-registry"
  region              = local.home
  alarm_subscriptions = lookup(var.alarm_subscriptions, local.home, [])
  log_retention_days  = var.log_retention_days

  prometheus_s3_uri       = "${local.release}/bin/prometheus"
  cloudwatch_agent_s3_uri = "${local.release}/bin/amazon-cloudwatch-agent.rpm"
  scraper_cert_s3_uri     = "${local.tls}/scraper.crt"
  scraper_key_s3_uri      = "${local.tls}/scraper.key"
}

locals {
  alarm_actions = distinct(concat([module.monitoring.alarm_topic_arn], lookup(var.alarm_actions, local.home, [])))
}

output "alarm_topic_arn" {
  description = "ARN of the registry's alarm topic (idgen-registry-alarms)."
  value       = module.monitoring.alarm_topic_arn
}

output "prometheus_workspace_id" {
  description = "ID of the registry's Amazon Managed Service for Prometheus workspace (alias idgen-registry)."
  value       = module.monitoring.workspace_id
}

output "prometheus_query_url" {
  description = "Query API of the registry's Prometheus workspace (SigV4, service aps)."
  value       = module.monitoring.query_url
}
