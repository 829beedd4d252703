################################################################################
# The registry's hosts: any failing /healthz behind its load balancer (a ticket, and the gate of
# its instance refresh), and none passing it (a page). Thresholds from deploy/alert-thresholds.json,
# read in main.tf's locals. The NLB passes TCP through (mutual TLS ends on the hosts), so it sees
# connections, not TLS or HTTP outcomes: those are the registry's own metrics, scraped on the
# hosts into the registry's Prometheus workspace.
################################################################################

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
