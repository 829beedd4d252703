# One region's share of the customer hostname: a latency record, an alias of the region's ALB,
# that Route 53 answers only while the region is healthy. Each region root makes its own, so a
# region's record lives and changes with that region's state; together they send each customer to
# the nearest healthy region, and a region with no healthy gateway (or whose gateways say their
# store does not answer) drops out of the answers.

locals {
  tags = merge(var.tags, {
    Service = "idgen"
    Region  = var.region
  })
}

resource "aws_route53_health_check" "this" {
  type              = "HTTPS"
  fqdn              = var.lb_dns_name
  port              = 443
  resource_path     = var.health_check_path
  request_interval  = var.request_interval
  failure_threshold = var.failure_threshold
  enable_sni        = true
  tags              = merge(local.tags, { Name = "idgen-gateway-${var.region}" })
}

resource "aws_route53_record" "this" {
  zone_id        = var.zone_id
  name           = var.hostname
  type           = "A"
  set_identifier = var.region

  latency_routing_policy {
    region = var.region
  }

  health_check_id = aws_route53_health_check.this.id

  alias {
    name                   = var.lb_dns_name
    zone_id                = var.lb_zone_id
    evaluate_target_health = true
  }
}
