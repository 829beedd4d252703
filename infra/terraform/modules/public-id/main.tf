data "aws_region" "current" {}

data "aws_partition" "current" {}

data "aws_caller_identity" "current" {}

locals {
  name = "idgen-public-id-${var.region}"

  tags = merge(var.tags, {
    Service = "idgen"
    Region  = var.region
  })

  # The store of record: one table of this name in every region, never a global table.
  table = "idgen-public-ids"

  # The table of every region of the topology: each region's programs write a mapping to its owner
  # region's table and that region's peer's, and read the others' on a local miss.
  table_arns = [for r in sort(keys(var.regions)) : "arn:${data.aws_partition.current.partition}:dynamodb:${r}:${data.aws_caller_identity.current.account_id}:table/${local.table}"]

  # A region whose DynamoDB interface endpoint is not known yet (its root not applied: null in
  # dynamodb_endpoints) is in the store file all the same, as every region must be (the peers name
  # it), marked absent: the programs never ask it, never make it a copy's home, and do not count
  # it as a region that did not answer. Its endpoint is a name that never resolves (.invalid,
  # RFC 6761), never called.
  not_applied_endpoint = { for r in keys(var.regions) : r => "https://dynamodb.${r}.not-applied.invalid" }

  # The store file both programs read (--store regions:/etc/idgen/public-id/regions.json).
  store_file = "public-id/regions.json"
  store_doc = jsonencode({
    region = var.region
    copies = 2
    regions = [for r in sort(keys(var.regions)) : {
      name     = r
      number   = var.regions[r].number
      peer     = var.regions[r].peer
      endpoint = coalesce(try(var.dynamodb_endpoints[r], null), local.not_applied_endpoint[r])
      table    = local.table
      absent   = try(var.dynamodb_endpoints[r], null) == null
    }]
  })

  # HTTPS to the region's DynamoDB interface endpoint (this region's table); the other regions'
  # are in peer_vpc_cidrs, whose HTTPS rules the fleets have.
  dynamodb_egress = { description = "HTTPS to the region's DynamoDB interface endpoint", port = 443, security_group_id = var.dynamodb_endpoint_security_group_id }

  # The regional Redis, as both programs reach it (TLS, AUTH token from the environment).
  redis_port = 6379
  redis_secret = {
    parameter = var.redis_auth_parameter
    prefix    = "rediss://:"
    suffix    = "@${aws_elasticache_replication_group.cache.primary_endpoint_address}:${local.redis_port}"
  }

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

  # The table's operations the programs call (DescribeTable is not reported per operation;
  # TransactWriteItems of Puts is granted as PutItem).
  table_operations = ["GetItem", "PutItem", "Scan", "TransactWriteItems"]
}

################################################################################
# The store of record: region-local, never a global table (the service copies each mapping to
# the owner region's peer itself, first writer wins; a global table resolves last writer wins)
################################################################################

resource "aws_dynamodb_table" "public_ids" {
  name                        = "idgen-public-ids"
  billing_mode                = "PAY_PER_REQUEST"
  table_class                 = "STANDARD_INFREQUENT_ACCESS"
  hash_key                    = "k"
  deletion_protection_enabled = true

  attribute {
    name = "k"
    type = "S"
  }

  ttl {
    attribute_name = "x"
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

    precondition {
      condition     = data.aws_region.current.name == var.region
      error_message = "the aws provider given to this module is in ${data.aws_region.current.name}, not ${var.region}."
    }
    precondition {
      condition     = contains(keys(var.regions), var.region)
      error_message = "region ${var.region} is not a region of regions."
    }
    precondition {
      condition     = length(setsubtract(keys(var.regions), keys(var.dynamodb_endpoints))) == 0 && length(setsubtract(keys(var.dynamodb_endpoints), keys(var.regions))) == 0
      error_message = "dynamodb_endpoints (the region roots' public_id_dynamodb_endpoints) must name every region of regions and no other, each with its interface endpoint's URL or null while its root is not applied:${length(setsubtract(keys(var.regions), keys(var.dynamodb_endpoints))) > 0 ? " missing: ${join(", ", sort(setsubtract(keys(var.regions), keys(var.dynamodb_endpoints))))};" : ""}${length(setsubtract(keys(var.dynamodb_endpoints), keys(var.regions))) > 0 ? " not a region: ${join(", ", sort(setsubtract(keys(var.dynamodb_endpoints), keys(var.regions))))};" : ""}"
    }
    precondition {
      condition     = try(var.dynamodb_endpoints[var.region], null) != null
      error_message = "dynamodb_endpoints has no URL for this region (${var.region}): its own DynamoDB interface endpoint's."
    }
  }
}

################################################################################
# Grants: on the table of every region; public-id also scans (a region that comes back empty is
# refilled by its public-id processes from the other regions' tables). Nothing deletes, updates
# or manages a table.
################################################################################

data "aws_iam_policy_document" "public_id" {
  statement {
    sid       = "PublicIDs"
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Scan"]
    resources = local.table_arns
  }
}

data "aws_iam_policy_document" "gateway" {
  statement {
    sid       = "PublicIDs"
    actions   = ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem"]
    resources = local.table_arns
  }
}

################################################################################
# The regional Redis: the hot cache in front of the tables (both programs) and the gateways'
# shared rate limit. A cache, not a store: no AOF, no snapshots; every key carries a TTL.
################################################################################

resource "aws_security_group" "cache" {
  name_prefix = "${local.name}-redis-"
  description = "idgen public-ID Redis: 6379 from the public-id and public-id-gateway hosts only"
  vpc_id      = var.vpc_id
  tags        = merge(local.tags, { Name = "${local.name}-redis", Component = "public-id-redis" })

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_vpc_security_group_ingress_rule" "cache" {
  for_each = {
    public-id         = module.public_id.security_group_id
    public-id-gateway = module.gateway.security_group_id
  }

  security_group_id            = aws_security_group.cache.id
  description                  = "Redis (TLS) from the ${each.key} hosts"
  ip_protocol                  = "tcp"
  from_port                    = local.redis_port
  to_port                      = local.redis_port
  referenced_security_group_id = each.value
  tags                         = local.tags
}

################################################################################
# The region's DynamoDB interface endpoint (modules/endpoints): both fleets reach this region's
# table at it, as the other regions' fleets do over the Transit Gateway (admitted there by CIDR)
################################################################################

resource "aws_vpc_security_group_ingress_rule" "dynamodb_endpoint" {
  for_each = {
    public-id         = module.public_id.security_group_id
    public-id-gateway = module.gateway.security_group_id
  }

  security_group_id            = var.dynamodb_endpoint_security_group_id
  description                  = "HTTPS to the DynamoDB interface endpoint from the ${each.key} hosts"
  ip_protocol                  = "tcp"
  from_port                    = 443
  to_port                      = 443
  referenced_security_group_id = each.value
  tags                         = local.tags
}

resource "aws_elasticache_subnet_group" "cache" {
  name        = local.name
  description = "idgen public-ID Redis: the region's private subnets"
  subnet_ids  = var.subnet_ids
  tags        = local.tags
}

# allkeys-lru: a full cache evicts the least recently used key, whatever it is, and never refuses
# a write (the default volatile-lru refuses writes once only keys without a TTL are left).
resource "aws_elasticache_parameter_group" "cache" {
  name        = local.name
  family      = "redis7"
  description = "idgen public-ID Redis: a cache (allkeys-lru)"

  parameter {
    name  = "maxmemory-policy"
    value = "allkeys-lru"
  }

  tags = local.tags
}

# The AUTH token, written once by an operator (README): Terraform reads it, it is never in the
# configuration.
data "aws_ssm_parameter" "redis_auth" {
  name            = var.redis_auth_parameter
  with_decryption = true
}

resource "aws_elasticache_replication_group" "cache" {
  replication_group_id       = local.name
  description                = "idgen public-ID cache and gateway rate limit (${var.region})"
  engine                     = "redis"
  engine_version             = var.redis_engine_version
  node_type                  = var.redis_node_type
  num_cache_clusters         = var.redis_nodes
  port                       = local.redis_port
  parameter_group_name       = aws_elasticache_parameter_group.cache.name
  subnet_group_name          = aws_elasticache_subnet_group.cache.name
  security_group_ids         = [aws_security_group.cache.id]
  automatic_failover_enabled = true
  multi_az_enabled           = true
  transit_encryption_enabled = true
  at_rest_encryption_enabled = true
  kms_key_id                 = var.redis_kms_key_arn
  auth_token                 = data.aws_ssm_parameter.redis_auth.value
  auth_token_update_strategy = "ROTATE"
  snapshot_retention_limit   = 0
  maintenance_window         = var.redis_maintenance_window
  auto_minor_version_upgrade = true
  apply_immediately          = false
  tags                       = local.tags

  lifecycle {
    precondition {
      condition     = data.aws_region.current.name == var.region
      error_message = "the aws provider given to this module is in ${data.aws_region.current.name}, not ${var.region}."
    }
  }
}

################################################################################
# public-id: the internal API, mutual TLS, behind an internal NLB like the generators
################################################################################

module "public_id" {
  source = "../fleet"

  name    = "idgen-pid-${var.region}"
  service = "public-id"
  region  = var.region

  service_args = [
    "--listen", "0.0.0.0:443",
    "--region", var.region,
    "--store", "regions:/etc/idgen/${local.store_file}",
    "--resources", join(",", var.resources),
    "--default-resource", var.resources[0],
    "--callers", "/etc/idgen/callers.json",
    "--tls-cert", "/etc/idgen/tls.crt",
    "--tls-key", "/etc/idgen/tls.key",
    "--client-ca", "/etc/idgen/client-ca.pem",
  ]
  # --cache-redis, from the environment: the URL holds the AUTH token.
  secret_environment = { IDGEN_CACHE_REDIS = local.redis_secret }
  secret_kms_key_arn = var.redis_auth_kms_key_arn
  inline_files       = { (local.store_file) = local.store_doc }

  artifact_s3_uri = var.public_id_artifact_s3_uri
  config_files = {
    "callers.json" = var.callers_s3_uri
  }
  certificate_files = {
    "tls.crt"       = var.tls_cert_s3_uri
    "tls.key"       = var.tls_key_s3_uri
    "client-ca.pem" = var.client_ca_s3_uri
  }
  s3_kms_key_arn = var.s3_kms_key_arn
  policy_json    = data.aws_iam_policy_document.public_id.json

  vpc_id       = var.vpc_id
  vpc_cidr     = var.vpc_cidr
  subnet_ids   = var.subnet_ids
  caller_cidrs = distinct(concat(var.caller_cidrs, var.failover_caller_cidrs))
  service_port = 443
  # The internal API has no plaintext health port: the NLB checks TCP on 443.
  health_port = null

  endpoints_security_group_id = var.endpoints_security_group_id
  peer_cidrs                  = var.peer_vpc_cidrs
  egress_peers = {
    redis    = { description = "Redis (TLS) of the region", port = local.redis_port, security_group_id = aws_security_group.cache.id }
    dynamodb = local.dynamodb_egress
  }

  instance_type = var.instance_type
  ami_id        = var.ami_id
  capacity      = var.public_id_capacity

  boot_dependencies = var.boot_dependencies
  # The gateways' peak and the region's other fleets': the two fleets share the region's quota.
  quota_vcpus_elsewhere = var.quota_vcpus_elsewhere + module.gateway.vcpus_at_max
  refresh_alarms        = [aws_cloudwatch_metric_alarm.public_id_unhealthy_hosts.alarm_name]

  target_group_name = "idgen-public-id"
  zone_id           = var.zone_id
  dns_name          = var.dns_name

  tags = local.tags
}

################################################################################
# public-id-gateway: the customer gateway, plain HTTP behind the internet-facing ALB
################################################################################

module "gateway" {
  source = "../fleet"

  name    = "idgen-gw-${var.region}"
  service = "public-id-gateway"
  region  = var.region

  service_args = [
    "--listen", "0.0.0.0:${var.gateway_port}",
    "--metrics-listen", "0.0.0.0:${var.gateway_metrics_port}",
    "--region", var.region,
    "--routes", "/etc/idgen/routes.json",
    "--store", "regions:/etc/idgen/${local.store_file}",
    # Only the ALB reaches the customer port, from its nodes in the VPC.
    "--trusted-proxies", var.vpc_cidr,
    # An ALB passes a customer's X-Request-Id on: the gateway makes every request ID.
    "--request-id-header=",
  ]
  # --cache-redis and --rate-redis, from the environment: the URL holds the AUTH token.
  secret_environment = {
    IDGEN_CACHE_REDIS = local.redis_secret
    IDGEN_RATE_REDIS  = local.redis_secret
  }
  secret_kms_key_arn = var.redis_auth_kms_key_arn
  inline_files       = { (local.store_file) = local.store_doc }

  artifact_s3_uri = var.gateway_artifact_s3_uri
  config_files = {
    "routes.json" = var.routes_s3_uri
  }
  s3_kms_key_arn = var.s3_kms_key_arn
  policy_json    = data.aws_iam_policy_document.gateway.json

  vpc_id   = var.vpc_id
  vpc_cidr = var.vpc_cidr
  # The customer port from the ALB only; the operator port from the VPC (Prometheus, operators).
  caller_cidrs           = []
  caller_security_groups = { alb = aws_security_group.alb.id }
  subnet_ids             = var.subnet_ids
  service_port           = var.gateway_port
  health_port            = var.gateway_metrics_port

  endpoints_security_group_id = var.endpoints_security_group_id
  peer_cidrs                  = var.peer_vpc_cidrs
  egress_peers = merge(
    {
      redis    = { description = "Redis (TLS) of the region", port = local.redis_port, security_group_id = aws_security_group.cache.id }
      dynamodb = local.dynamodb_egress
    },
    { for u in var.gateway_upstreams : "upstream ${u.cidr}:${u.port}" => { description = "an upstream of the routes: ${u.description}", port = u.port, cidr_ipv4 = u.cidr } },
  )

  instance_type = var.instance_type
  ami_id        = var.ami_id
  capacity      = var.gateway_capacity

  boot_dependencies     = var.boot_dependencies
  quota_vcpus_elsewhere = var.quota_vcpus_elsewhere
  refresh_alarms = [
    aws_cloudwatch_metric_alarm.gateway_unhealthy_hosts.alarm_name,
    aws_cloudwatch_metric_alarm.gateway_5xx.alarm_name,
  ]

  load_balancer     = "none"
  target_group_arns = [aws_lb_target_group.gateway.arn]

  tags = local.tags
}

################################################################################
# The customer edge: internet-facing ALB, TLS from ACM, HTTP redirected, access logs in S3
################################################################################

resource "aws_security_group" "alb" {
  name_prefix = "idgen-gw-${var.region}-alb-"
  description = "idgen customer ALB: HTTPS and HTTP (redirected) from the internet, to the gateways only"
  vpc_id      = var.vpc_id
  tags        = merge(local.tags, { Name = "idgen-gw-${var.region}-alb", Component = "public-id-alb" })

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_vpc_security_group_ingress_rule" "alb" {
  for_each = { https = 443, http = 80 }

  security_group_id = aws_security_group.alb.id
  description       = "${upper(each.key)} from customers"
  ip_protocol       = "tcp"
  from_port         = each.value
  to_port           = each.value
  cidr_ipv4         = "0.0.0.0/0"
  tags              = local.tags
}

# Out to the gateways' customer port only (traffic and health checks alike).
resource "aws_vpc_security_group_egress_rule" "alb" {
  security_group_id            = aws_security_group.alb.id
  description                  = "the gateways' customer port"
  ip_protocol                  = "tcp"
  from_port                    = var.gateway_port
  to_port                      = var.gateway_port
  referenced_security_group_id = module.gateway.security_group_id
  tags                         = local.tags
}

resource "aws_lb" "gateway" {
  name                       = "idgen-gw-${var.region}"
  internal                   = false
  load_balancer_type         = "application"
  subnets                    = var.public_subnet_ids
  security_groups            = [aws_security_group.alb.id]
  drop_invalid_header_fields = true
  enable_deletion_protection = true
  tags                       = local.tags

  access_logs {
    bucket  = aws_s3_bucket.alb_logs.id
    prefix  = "alb"
    enabled = true
  }

  # The ALB checks at creation that it may write its logs.
  depends_on = [aws_s3_bucket_policy.alb_logs]
}

resource "aws_lb_target_group" "gateway" {
  name                 = "idgen-gateway"
  port                 = var.gateway_port
  protocol             = "HTTP"
  target_type          = "instance"
  vpc_id               = var.vpc_id
  deregistration_delay = 30

  # /healthz on the customer port itself: it proves the listener customers use accepts and
  # answers, and says 503 when the store does not answer and from the start of a drain.
  health_check {
    enabled             = true
    protocol            = "HTTP"
    port                = "traffic-port"
    path                = "/healthz"
    matcher             = "200"
    interval            = 10
    timeout             = 5
    healthy_threshold   = 3
    unhealthy_threshold = 3
  }

  tags = local.tags
}

resource "aws_lb_listener" "https" {
  load_balancer_arn = aws_lb.gateway.arn
  port              = 443
  protocol          = "HTTPS"
  ssl_policy        = var.ssl_policy
  certificate_arn   = var.certificate_arn
  tags              = local.tags

  default_action {
    type             = "forward"
    target_group_arn = aws_lb_target_group.gateway.arn
  }
}

resource "aws_lb_listener" "http" {
  load_balancer_arn = aws_lb.gateway.arn
  port              = 80
  protocol          = "HTTP"
  tags              = local.tags

  default_action {
    type = "redirect"

    redirect {
      protocol    = "HTTPS"
      port        = "443"
      status_code = "HTTP_301"
    }
  }
}

# The ALB's access logs: SSE-S3 (what ALB log delivery supports), private, TLS only, expiring.
data "aws_elb_service_account" "current" {}

resource "aws_s3_bucket" "alb_logs" {
  bucket = "idgen-alb-logs-${data.aws_caller_identity.current.account_id}-${var.region}"
  tags   = local.tags
}

resource "aws_s3_bucket_ownership_controls" "alb_logs" {
  bucket = aws_s3_bucket.alb_logs.id

  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_public_access_block" "alb_logs" {
  bucket                  = aws_s3_bucket.alb_logs.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_server_side_encryption_configuration" "alb_logs" {
  bucket = aws_s3_bucket.alb_logs.id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "alb_logs" {
  bucket = aws_s3_bucket.alb_logs.id

  rule {
    id     = "expire-access-logs"
    status = "Enabled"

    filter {}

    expiration {
      days = var.access_log_days
    }
  }
}

data "aws_iam_policy_document" "alb_logs" {
  statement {
    sid       = "ALBAccessLogs"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.alb_logs.arn}/alb/AWSLogs/${data.aws_caller_identity.current.account_id}/*"]

    principals {
      type        = "AWS"
      identifiers = [data.aws_elb_service_account.current.arn]
    }
  }

  statement {
    sid       = "TLSOnly"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.alb_logs.arn, "${aws_s3_bucket.alb_logs.arn}/*"]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_s3_bucket_policy" "alb_logs" {
  bucket = aws_s3_bucket.alb_logs.id
  policy = data.aws_iam_policy_document.alb_logs.json

  depends_on = [aws_s3_bucket_public_access_block.alb_logs]
}
