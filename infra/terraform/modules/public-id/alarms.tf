################################################################################
# Alarms (thresholds from deploy/alert-thresholds.json)
################################################################################

# The share of customers' requests answered 5xx, by the ALB itself (no healthy gateway, a timeout)
# or by a gateway (502 for a refused upstream answer, 503 when the store does not answer).
resource "aws_cloudwatch_metric_alarm" "gateway_5xx" {
  alarm_name          = "idgen-${var.region}-gateway-5xx-rate"
  alarm_description   = local.alarm_descriptions["IdgenGatewayALB5xxRate"]
  evaluation_periods  = local.for_minutes["IdgenGatewayALB5xxRate"]
  datapoints_to_alarm = local.for_minutes["IdgenGatewayALB5xxRate"]
  comparison_operator = local.operators["IdgenGatewayALB5xxRate"]
  threshold           = local.thresholds["IdgenGatewayALB5xxRate"].threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions

  metric_query {
    id          = "rate"
    expression  = "IF(requests > 0, (FILL(elb, 0) + FILL(target, 0)) / requests, 0)"
    label       = "Share of requests answered 5xx by ${aws_lb.gateway.name}"
    return_data = true
  }

  dynamic "metric_query" {
    for_each = {
      requests = "RequestCount"
      elb      = "HTTPCode_ELB_5XX_Count"
      target   = "HTTPCode_Target_5XX_Count"
    }

    content {
      id = metric_query.key

      metric {
        namespace   = "AWS/ApplicationELB"
        metric_name = metric_query.value
        stat        = "Sum"
        period      = 60
        dimensions = {
          LoadBalancer = aws_lb.gateway.arn_suffix
        }
      }
    }
  }

  tags = local.tags
}

resource "aws_cloudwatch_metric_alarm" "gateway_unhealthy_hosts" {
  alarm_name          = "idgen-${var.region}-gateway-unhealthy-hosts"
  alarm_description   = local.alarm_descriptions["IdgenGatewayUnhealthyHosts"]
  namespace           = "AWS/ApplicationELB"
  metric_name         = "UnHealthyHostCount"
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = local.for_minutes["IdgenGatewayUnhealthyHosts"]
  datapoints_to_alarm = local.for_minutes["IdgenGatewayUnhealthyHosts"]
  comparison_operator = local.operators["IdgenGatewayUnhealthyHosts"]
  threshold           = local.thresholds["IdgenGatewayUnhealthyHosts"].threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions

  dimensions = {
    LoadBalancer = aws_lb.gateway.arn_suffix
    TargetGroup  = aws_lb_target_group.gateway.arn_suffix
  }

  tags = local.tags
}

resource "aws_cloudwatch_metric_alarm" "public_id_unhealthy_hosts" {
  alarm_name          = "idgen-${var.region}-public-id-unhealthy-hosts"
  alarm_description   = local.alarm_descriptions["IdgenPublicIDUnhealthyHosts"]
  namespace           = "AWS/NetworkELB"
  metric_name         = "UnHealthyHostCount"
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = local.for_minutes["IdgenPublicIDUnhealthyHosts"]
  datapoints_to_alarm = local.for_minutes["IdgenPublicIDUnhealthyHosts"]
  comparison_operator = local.operators["IdgenPublicIDUnhealthyHosts"]
  threshold           = local.thresholds["IdgenPublicIDUnhealthyHosts"].threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions

  dimensions = {
    LoadBalancer = module.public_id.lb_arn_suffix
    TargetGroup  = module.public_id.target_group_arn_suffix
  }

  tags = local.tags
}

resource "aws_cloudwatch_metric_alarm" "table_throttles" {
  alarm_name          = "idgen-${var.region}-public-id-table-throttles"
  alarm_description   = local.alarm_descriptions["IdgenPublicIDTableThrottled"]
  evaluation_periods  = local.for_minutes["IdgenPublicIDTableThrottled"]
  datapoints_to_alarm = local.for_minutes["IdgenPublicIDTableThrottled"]
  comparison_operator = local.operators["IdgenPublicIDTableThrottled"]
  threshold           = local.thresholds["IdgenPublicIDTableThrottled"].threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions

  metric_query {
    id          = "total"
    expression  = join(" + ", [for op in local.table_operations : "FILL(${lower(op)}, 0)"])
    label       = "Throttled requests on ${aws_dynamodb_table.public_ids.name}"
    return_data = true
  }

  dynamic "metric_query" {
    for_each = toset(local.table_operations)

    content {
      id = lower(metric_query.value)

      metric {
        namespace   = "AWS/DynamoDB"
        metric_name = "ThrottledRequests"
        stat        = "Sum"
        period      = 60
        dimensions = {
          TableName = aws_dynamodb_table.public_ids.name
          Operation = metric_query.value
        }
      }
    }
  }

  tags = local.tags
}

resource "aws_cloudwatch_metric_alarm" "table_system_errors" {
  alarm_name          = "idgen-${var.region}-public-id-table-system-errors"
  alarm_description   = local.alarm_descriptions["IdgenPublicIDTableSystemErrors"]
  evaluation_periods  = local.for_minutes["IdgenPublicIDTableSystemErrors"]
  datapoints_to_alarm = local.for_minutes["IdgenPublicIDTableSystemErrors"]
  comparison_operator = local.operators["IdgenPublicIDTableSystemErrors"]
  threshold           = local.thresholds["IdgenPublicIDTableSystemErrors"].threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions

  metric_query {
    id          = "total"
    expression  = join(" + ", [for op in local.table_operations : "FILL(${lower(op)}, 0)"])
    label       = "System errors on ${aws_dynamodb_table.public_ids.name}"
    return_data = true
  }

  dynamic "metric_query" {
    for_each = toset(local.table_operations)

    content {
      id = lower(metric_query.value)

      metric {
        namespace   = "AWS/DynamoDB"
        metric_name = "SystemErrors"
        stat        = "Sum"
        period      = 60
        dimensions = {
          TableName = aws_dynamodb_table.public_ids.name
          Operation = metric_query.value
        }
      }
    }
  }

  tags = local.tags
}

resource "aws_cloudwatch_metric_alarm" "redis_cpu" {
  alarm_name          = "idgen-${var.region}-public-id-redis-cpu-high"
  alarm_description   = local.alarm_descriptions["IdgenPublicIDRedisCPUHigh"]
  evaluation_periods  = local.for_minutes["IdgenPublicIDRedisCPUHigh"]
  datapoints_to_alarm = local.for_minutes["IdgenPublicIDRedisCPUHigh"]
  comparison_operator = local.operators["IdgenPublicIDRedisCPUHigh"]
  threshold           = local.thresholds["IdgenPublicIDRedisCPUHigh"].threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions

  metric_query {
    id          = "total"
    expression  = "MAX([${join(", ", [for c in sort(aws_elasticache_replication_group.cache.member_clusters) : "n${substr(c, -3, 3)}"])}])"
    label       = "Busiest node's engine CPU of ${aws_elasticache_replication_group.cache.id}"
    return_data = true
  }

  # One series per node (the member clusters <group>-001, -002, …), whichever is primary now.
  dynamic "metric_query" {
    for_each = aws_elasticache_replication_group.cache.member_clusters

    content {
      id = "n${substr(metric_query.value, -3, 3)}"

      metric {
        namespace   = "AWS/ElastiCache"
        metric_name = "EngineCPUUtilization"
        stat        = "Average"
        period      = 60
        dimensions = {
          CacheClusterId = metric_query.value
        }
      }
    }
  }

  tags = local.tags
}

resource "aws_cloudwatch_metric_alarm" "redis_memory" {
  alarm_name          = "idgen-${var.region}-public-id-redis-memory-high"
  alarm_description   = local.alarm_descriptions["IdgenPublicIDRedisMemoryHigh"]
  evaluation_periods  = local.for_minutes["IdgenPublicIDRedisMemoryHigh"]
  datapoints_to_alarm = local.for_minutes["IdgenPublicIDRedisMemoryHigh"]
  comparison_operator = local.operators["IdgenPublicIDRedisMemoryHigh"]
  threshold           = local.thresholds["IdgenPublicIDRedisMemoryHigh"].threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions

  metric_query {
    id          = "total"
    expression  = "MAX([${join(", ", [for c in sort(aws_elasticache_replication_group.cache.member_clusters) : "n${substr(c, -3, 3)}"])}])"
    label       = "Fullest node's memory (of maxmemory) of ${aws_elasticache_replication_group.cache.id}"
    return_data = true
  }

  # One series per node (the member clusters <group>-001, -002, …), whichever is primary now.
  dynamic "metric_query" {
    for_each = aws_elasticache_replication_group.cache.member_clusters

    content {
      id = "n${substr(metric_query.value, -3, 3)}"

      metric {
        namespace   = "AWS/ElastiCache"
        metric_name = "DatabaseMemoryUsagePercentage"
        stat        = "Maximum"
        period      = 60
        dimensions = {
          CacheClusterId = metric_query.value
        }
      }
    }
  }

  tags = local.tags
}

resource "aws_cloudwatch_metric_alarm" "redis_evictions" {
  alarm_name          = "idgen-${var.region}-public-id-redis-evictions"
  alarm_description   = local.alarm_descriptions["IdgenPublicIDRedisEvictions"]
  evaluation_periods  = local.for_minutes["IdgenPublicIDRedisEvictions"]
  datapoints_to_alarm = local.for_minutes["IdgenPublicIDRedisEvictions"]
  comparison_operator = local.operators["IdgenPublicIDRedisEvictions"]
  threshold           = local.thresholds["IdgenPublicIDRedisEvictions"].threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions

  metric_query {
    id          = "total"
    expression  = "SUM([${join(", ", [for c in sort(aws_elasticache_replication_group.cache.member_clusters) : "n${substr(c, -3, 3)}"])}])"
    label       = "Keys evicted of ${aws_elasticache_replication_group.cache.id}"
    return_data = true
  }

  # One series per node (the member clusters <group>-001, -002, …), whichever is primary now.
  dynamic "metric_query" {
    for_each = aws_elasticache_replication_group.cache.member_clusters

    content {
      id = "n${substr(metric_query.value, -3, 3)}"

      metric {
        namespace   = "AWS/ElastiCache"
        metric_name = "Evictions"
        stat        = "Sum"
        period      = 60
        dimensions = {
          CacheClusterId = metric_query.value
        }
      }
    }
  }

  tags = local.tags
}
