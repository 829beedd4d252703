################################################################################
# The registry's alarms (thresholds from deploy/alert-thresholds.json): its load balancer's view
# of the hosts. The NLB passes TCP through (mutual TLS ends on the hosts), so it sees connections,
# not TLS or HTTP outcomes: those are the registry's own metrics, scraped on the hosts.
################################################################################

variable "alarm_actions" {
  description = "SNS topic ARNs (in the registry's region) that the registry's alarms notify, on alarm and on OK."
  type        = list(string)
  default     = []
}

locals {
  alert_doc  = jsondecode(file("${path.module}/../../../../deploy/alert-thresholds.json"))
  thresholds = { for a in local.alert_doc.alerts : a.name => a }
  # Each alarm's description: what it means, and its runbook as a link that opens from the console.
  alarm_descriptions = { for name, a in local.thresholds : name => "${a.meaning} Runbook: ${local.alert_doc.runbook_base}runbooks/alerts/${name}.md" }
  # A for-duration ("5m") as that many 1-minute periods.
  for_minutes = {
    for name, a in local.thresholds : name => max(1, ceil(
      tonumber(regex("^([0-9]+)[smh]$", a.for)[0]) * { s = 1, m = 60, h = 3600 }[regex("[smh]$", a.for)] / 60
    ))
  }
  operators = {
    for name, a in local.thresholds : name => a.comparison == "below" ? "LessThanThreshold" : "GreaterThanThreshold"
  }
}

resource "aws_cloudwatch_metric_alarm" "down" {
  alarm_name          = "idgen-registry-down"
  alarm_description   = local.alarm_descriptions["IdgenRegistryDown"]
  namespace           = "AWS/NetworkELB"
  metric_name         = "HealthyHostCount"
  statistic           = "Minimum"
  period              = 60
  evaluation_periods  = local.for_minutes["IdgenRegistryDown"]
  datapoints_to_alarm = local.for_minutes["IdgenRegistryDown"]
  comparison_operator = local.operators["IdgenRegistryDown"]
  threshold           = local.thresholds["IdgenRegistryDown"].threshold
  # No data is no healthy host reported: the load balancer or its target group is gone.
  treat_missing_data = "breaching"
  alarm_actions      = var.alarm_actions
  ok_actions         = var.alarm_actions

  dimensions = {
    LoadBalancer = module.fleet.lb_arn_suffix
    TargetGroup  = module.fleet.target_group_arn_suffix
  }

  tags = local.tags
}

resource "aws_cloudwatch_metric_alarm" "unhealthy_hosts" {
  alarm_name          = "idgen-registry-unhealthy-hosts"
  alarm_description   = local.alarm_descriptions["IdgenRegistryUnhealthyHosts"]
  namespace           = "AWS/NetworkELB"
  metric_name         = "UnHealthyHostCount"
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = local.for_minutes["IdgenRegistryUnhealthyHosts"]
  datapoints_to_alarm = local.for_minutes["IdgenRegistryUnhealthyHosts"]
  comparison_operator = local.operators["IdgenRegistryUnhealthyHosts"]
  threshold           = local.thresholds["IdgenRegistryUnhealthyHosts"].threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions

  dimensions = {
    LoadBalancer = module.fleet.lb_arn_suffix
    TargetGroup  = module.fleet.target_group_arn_suffix
  }

  tags = local.tags
}
