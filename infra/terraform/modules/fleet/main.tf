data "aws_partition" "current" {}

data "aws_caller_identity" "current" {}

# The pinned image, read only to check it: the fleet rolls to a new image when ami_id changes, never
# because an image was released.
data "aws_ami" "this" {
  filter {
    name   = "image-id"
    values = [var.ami_id]
  }
}

data "aws_ec2_instance_type" "this" {
  instance_type = var.instance_type
}

# Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances: every idgen fleet draws on it.
data "aws_servicequotas_service_quota" "vcpus" {
  service_code = "ec2"
  quota_code   = "L-1216C47A"
}

locals {
  tags = merge(var.tags, {
    Service   = "idgen"
    Component = var.service
  })

  unit = "idgen-${var.service}"
  nlb  = var.load_balancer == "internal-nlb"

  # The most hosts the group runs: its max size, and during an instance refresh the hosts launched
  # before the ones they replace (max_healthy_percentage above 100: at least one, the percentage
  # of the max size rounded up). The vCPU quota must hold them all at once.
  refresh_headroom = var.max_healthy_percentage > 100 ? max(1, ceil(var.capacity.max * (var.max_healthy_percentage - 100) / 100)) : 0
  peak_instances   = var.capacity.max + local.refresh_headroom

  # Every S3 object a host copies, at boot or when it refreshes its certificates, as IAM
  # resource ARNs.
  s3_objects = concat([var.artifact_s3_uri], values(var.config_files), values(var.certificate_files))
  s3_arns    = [for u in local.s3_objects : "arn:${data.aws_partition.current.partition}:s3:::${trimprefix(u, "s3://")}"]

  user_data = templatefile("${path.module}/user_data.sh.tftpl", {
    service           = var.service
    unit              = local.unit
    region            = var.region
    artifact_s3_uri   = var.artifact_s3_uri
    config_files      = var.config_files
    inline_files      = var.inline_files
    secrets           = var.secret_environment
    certificate_files = var.certificate_files
    refresh_interval  = var.certificate_refresh_interval
    reload_signal     = coalesce(var.certificate_reload_signal, "none")
    exec_args         = join(" ", var.service_args)
  })
}

################################################################################
# Identity: the hosts' role, its grants and the instance profile
################################################################################

data "aws_iam_policy_document" "assume" {
  statement {
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "this" {
  name_prefix        = "${var.name}-"
  description        = "Hosts of ${var.name} (idgen ${var.service})."
  assume_role_policy = data.aws_iam_policy_document.assume.json
  tags               = local.tags
}

# The service's own data (its DynamoDB tables), from the calling module.
resource "aws_iam_role_policy" "service" {
  name   = "service-data"
  role   = aws_iam_role.this.id
  policy = var.policy_json
}

data "aws_iam_policy_document" "artifacts" {
  statement {
    sid       = "ReadBootObjects"
    actions   = ["s3:GetObject"]
    resources = local.s3_arns
  }

  dynamic "statement" {
    for_each = var.s3_kms_key_arn == null ? [] : [var.s3_kms_key_arn]

    content {
      sid       = "DecryptBootObjects"
      actions   = ["kms:Decrypt"]
      resources = [statement.value]
    }
  }

  # The secrets of secret_environment, read once at boot.
  dynamic "statement" {
    for_each = length(var.secret_environment) == 0 ? [] : [1]

    content {
      sid       = "ReadBootSecrets"
      actions   = ["ssm:GetParameter"]
      resources = sort(distinct([for s in values(var.secret_environment) : "arn:${data.aws_partition.current.partition}:ssm:${var.region}:${data.aws_caller_identity.current.account_id}:parameter${s.parameter}"]))
    }
  }

  dynamic "statement" {
    for_each = length(var.secret_environment) == 0 || var.secret_kms_key_arn == null ? [] : [var.secret_kms_key_arn]

    content {
      sid       = "DecryptBootSecrets"
      actions   = ["kms:Decrypt"]
      resources = [statement.value]
    }
  }
}

resource "aws_iam_role_policy" "artifacts" {
  name   = "boot-objects"
  role   = aws_iam_role.this.id
  policy = data.aws_iam_policy_document.artifacts.json
}

# Session Manager and Run Command: the runbooks reach hosts with aws ssm send-command by tag.
resource "aws_iam_role_policy_attachment" "ssm" {
  role       = aws_iam_role.this.name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/AmazonSSMManagedInstanceCore"
}

resource "aws_iam_instance_profile" "this" {
  name_prefix = "${var.name}-"
  role        = aws_iam_role.this.name
  tags        = local.tags
}

################################################################################
# Network: the hosts' security group
################################################################################

# The AWS-managed prefix lists of the services the hosts reach through the VPC's gateway
# endpoints (modules/endpoints): the same lists the endpoints route, known before they exist.
data "aws_ec2_managed_prefix_list" "gateway" {
  for_each = toset(["dynamodb", "s3"])

  name = "com.amazonaws.${var.region}.${each.key}"
}

locals {
  # CIDRs in their canonical form (10.0.0.1/16 is 10.0.0.0/16), so that two spellings of one
  # network make one rule: EC2 refuses a second identical rule (InvalidPermission.Duplicate).
  vpc_cidr     = cidrsubnet(var.vpc_cidr, 0, 0)
  caller_cidrs = distinct([for c in var.caller_cidrs : cidrsubnet(c, 0, 0)])
  peer_cidrs   = distinct([for c in var.peer_cidrs : cidrsubnet(c, 0, 0)])

  # The load balancer's health checks come from the VPC: HTTP on the health port, or TCP on the
  # service port when the service has none. When that is the service port and the VPC is one of
  # the callers' CIDRs, the callers' rule admits the health checks too: one rule per source and
  # port, whatever the inputs.
  health_port   = coalesce(var.health_port, var.service_port)
  health_merged = local.health_port == var.service_port && contains(local.caller_cidrs, local.vpc_cidr)

  # HTTPS out, and only to what the hosts call: DynamoDB and S3 through the gateway endpoints'
  # prefix lists, SSM, CloudWatch, STS and KMS through the interface endpoints' security group,
  # and the peers the service talks to (the generators: the registry). The Amazon Time Sync
  # Service, instance metadata and the VPC's DNS resolver are not subject to security groups.
  egress = merge(
    { for k, pl in data.aws_ec2_managed_prefix_list.gateway : k => {
      description    = "HTTPS to ${k == "s3" ? "S3" : "DynamoDB"} (gateway endpoint)"
      port           = 443
      prefix_list_id = pl.id
      cidr_ipv4      = null
      security_group = null
    } },
    { endpoints = {
      description    = "HTTPS to the VPC's interface endpoints (SSM, CloudWatch, STS, KMS)"
      port           = 443
      prefix_list_id = null
      cidr_ipv4      = null
      security_group = var.endpoints_security_group_id
    } },
    { for c in local.peer_cidrs : "peer ${c}" => {
      description    = "HTTPS to a peer of ${var.service}"
      port           = 443
      prefix_list_id = null
      cidr_ipv4      = c
      security_group = null
    } },
    # Peers on ports of their own (the public-ID fleets' Redis, the gateway's upstreams).
    { for k, p in var.egress_peers : "peer ${k}" => {
      description    = p.description
      port           = p.port
      prefix_list_id = null
      cidr_ipv4      = p.cidr_ipv4 == null ? null : cidrsubnet(p.cidr_ipv4, 0, 0)
      security_group = p.security_group_id
    } },
  )
}

resource "aws_security_group" "this" {
  name_prefix = "${var.name}-"
  description = "idgen ${var.service}: service port from callers, health port from the VPC"
  vpc_id      = var.vpc_id
  tags        = merge(local.tags, { Name = var.name })

  lifecycle {
    create_before_destroy = true

    precondition {
      condition     = length(var.caller_cidrs) + length(var.caller_security_groups) > 0
      error_message = "the fleet has no callers: give caller_cidrs or caller_security_groups."
    }
  }
}

resource "aws_vpc_security_group_ingress_rule" "service" {
  for_each = toset(local.caller_cidrs)

  security_group_id = aws_security_group.this.id
  description       = local.health_merged && each.value == local.vpc_cidr ? "idgen ${var.service} (mTLS) from callers, and load balancer health checks" : "idgen ${var.service} (mTLS) from callers"
  ip_protocol       = "tcp"
  from_port         = var.service_port
  to_port           = var.service_port
  cidr_ipv4         = each.value
  tags              = local.tags
}

# Callers admitted by their security group (a load balancer that does not preserve client
# addresses: the customer gateway's ALB).
resource "aws_vpc_security_group_ingress_rule" "service_from_group" {
  for_each = var.caller_security_groups

  security_group_id            = aws_security_group.this.id
  description                  = "idgen ${var.service} from ${each.key}"
  ip_protocol                  = "tcp"
  from_port                    = var.service_port
  to_port                      = var.service_port
  referenced_security_group_id = each.value
  tags                         = local.tags
}

# The load balancer's health checks, unless the callers' rule above already admits them.
resource "aws_vpc_security_group_ingress_rule" "health" {
  count = local.health_merged ? 0 : 1

  security_group_id = aws_security_group.this.id
  description       = local.nlb ? "load balancer health checks from the VPC" : "the operator port (/metrics, /healthz) from the VPC"
  ip_protocol       = "tcp"
  from_port         = local.health_port
  to_port           = local.health_port
  cidr_ipv4         = local.vpc_cidr
  tags              = local.tags
}

moved {
  from = aws_vpc_security_group_ingress_rule.health
  to   = aws_vpc_security_group_ingress_rule.health[0]
}

resource "aws_vpc_security_group_egress_rule" "https" {
  for_each = local.egress

  security_group_id            = aws_security_group.this.id
  description                  = each.value.description
  ip_protocol                  = "tcp"
  from_port                    = each.value.port
  to_port                      = each.value.port
  prefix_list_id               = each.value.prefix_list_id
  cidr_ipv4                    = each.value.cidr_ipv4
  referenced_security_group_id = each.value.security_group
  tags                         = local.tags
}

################################################################################
# Hosts: launch template and Auto Scaling group
################################################################################

resource "aws_launch_template" "this" {
  name_prefix            = "${var.name}-"
  description            = "idgen ${var.service}: Amazon Linux 2023 arm64, chrony on the Amazon Time Sync Service"
  image_id               = var.ami_id
  instance_type          = var.instance_type
  update_default_version = true
  user_data              = base64encode(local.user_data)
  vpc_security_group_ids = [aws_security_group.this.id]

  iam_instance_profile {
    arn = aws_iam_instance_profile.this.arn
  }

  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
    instance_metadata_tags      = "disabled"
  }

  block_device_mappings {
    device_name = "/dev/xvda"

    ebs {
      volume_size           = var.root_volume_size
      volume_type           = "gp3"
      encrypted             = true
      kms_key_id            = var.ebs_kms_key_arn
      delete_on_termination = true
    }
  }

  monitoring {
    enabled = true
  }

  tag_specifications {
    resource_type = "instance"
    tags          = merge(local.tags, { Name = var.name })
  }

  tag_specifications {
    resource_type = "volume"
    tags          = merge(local.tags, { Name = var.name })
  }

  tags = local.tags

  lifecycle {
    precondition {
      condition     = contains(data.aws_ec2_instance_type.this.supported_architectures, "arm64")
      error_message = "instance_type ${var.instance_type} does not support arm64: the idgen binaries are built for linux/arm64 (Graviton)."
    }
    precondition {
      condition     = data.aws_ami.this.architecture == "arm64"
      error_message = "ami_id ${var.ami_id} in ${var.region} is a ${data.aws_ami.this.architecture} image, not arm64: the idgen binaries are built for linux/arm64 (Graviton). Pin an Amazon Linux 2023 arm64 image of the region."
    }
  }
}

resource "aws_autoscaling_group" "this" {
  name_prefix         = "${var.name}-"
  vpc_zone_identifier = var.subnet_ids
  min_size            = var.capacity.min
  max_size            = var.capacity.max
  # Changed only through the configuration (the roots' fleets in live/idgen.tfvars, then plan and
  # apply): a desired capacity set by hand is put back by the next apply.
  desired_capacity = var.capacity.desired
  # Liveness: the group replaces a host only when EC2 says it is impaired or stopped (a boot that
  # gives up powers off). Readiness is the load balancer's: a host whose /healthz says 503 (no
  # lease, unsynchronized clock, expired certificate, unreachable table) gets no traffic but is
  # kept, so an incident of the lease table or a certificate never replaces the fleet, and
  # systemd restarts a service that exits.
  health_check_type         = "EC2"
  health_check_grace_period = var.health_check_grace_period
  target_group_arns         = local.nlb ? aws_lb_target_group.this[*].arn : var.target_group_arns
  wait_for_capacity_timeout = "15m"

  launch_template {
    id      = aws_launch_template.this.id
    version = aws_launch_template.this.latest_version
  }

  # A new launch template version (a release, a new ami_id, a changed boot script) rolls out in
  # steps: hosts are launched before the ones they replace, the refresh pauses at each checkpoint,
  # and rolls back to the previous version by itself when one of the fleet's alarms goes off.
  instance_refresh {
    strategy = "Rolling"

    preferences {
      min_healthy_percentage = var.min_healthy_percentage
      max_healthy_percentage = var.max_healthy_percentage
      instance_warmup        = tostring(var.health_check_grace_period)
      checkpoint_percentages = var.refresh_checkpoints
      checkpoint_delay       = tostring(var.refresh_checkpoint_delay)
      auto_rollback          = true

      alarm_specification {
        alarms = var.refresh_alarms
      }
    }
  }

  dynamic "tag" {
    for_each = merge(local.tags, { Name = var.name })

    content {
      key                 = tag.key
      value               = tag.value
      propagate_at_launch = true
    }
  }

  # What a host needs at boot, made here: its grants and every rule of its security group (the
  # S3 copies, SSM, the peers). What is made outside the module (the VPC's endpoints and their
  # security group's rules) comes in boot_dependencies, which the precondition below reads, so
  # the group waits for it too.
  depends_on = [
    aws_iam_role_policy.service,
    aws_iam_role_policy.artifacts,
    aws_iam_role_policy_attachment.ssm,
    aws_vpc_security_group_ingress_rule.service,
    aws_vpc_security_group_ingress_rule.service_from_group,
    aws_vpc_security_group_ingress_rule.health,
    aws_vpc_security_group_egress_rule.https,
  ]

  lifecycle {
    precondition {
      condition     = var.capacity.min <= var.capacity.desired && var.capacity.desired <= var.capacity.max
      error_message = "capacity: min (${var.capacity.min}) <= desired (${var.capacity.desired}) <= max (${var.capacity.max}) does not hold."
    }
    precondition {
      condition     = local.nlb ? var.target_group_name != null && var.zone_id != null && var.dns_name != null && length(var.target_group_arns) == 0 : length(var.target_group_arns) > 0
      error_message = "load_balancer internal-nlb needs target_group_name, zone_id and dns_name (and no target_group_arns); load_balancer none needs target_group_arns."
    }
    precondition {
      condition     = alltrue([for id in var.boot_dependencies : id != null && id != ""])
      error_message = "a boot dependency of ${var.name} (a VPC endpoint or a security group rule the hosts need at boot) has no ID."
    }
    # Checked at plan time, before anything is created: a group whose hosts do not fit the quota
    # would wait its 15 minutes for capacity, fail, and be left tainted.
    precondition {
      condition     = local.peak_instances * data.aws_ec2_instance_type.this.default_vcpus + var.quota_vcpus_elsewhere <= data.aws_servicequotas_service_quota.vcpus.value
      error_message = "${var.region}: the EC2 quota of running On-Demand Standard instances (L-1216C47A) is ${data.aws_servicequotas_service_quota.vcpus.value} vCPUs, but ${local.peak_instances * data.aws_ec2_instance_type.this.default_vcpus + var.quota_vcpus_elsewhere} are needed: ${var.name} ${local.peak_instances * data.aws_ec2_instance_type.this.default_vcpus} (${var.capacity.max} × ${var.instance_type} at max size + ${local.refresh_headroom} during an instance refresh, ${data.aws_ec2_instance_type.this.default_vcpus} vCPUs each) and the region's other fleets ${var.quota_vcpus_elsewhere}. Ask for a higher quota in ${var.region} (Service Quotas) or lower the max sizes."
    }
  }
}

################################################################################
# Endpoint: internal NLB (TCP passthrough, mTLS ends on the hosts) and its DNS name, unless the
# calling module brings its own load balancer (load_balancer none)
################################################################################

resource "aws_lb" "this" {
  count = local.nlb ? 1 : 0

  name                             = var.name
  internal                         = true
  load_balancer_type               = "network"
  subnets                          = var.subnet_ids
  enable_cross_zone_load_balancing = true
  enable_deletion_protection       = var.deletion_protection
  tags                             = local.tags
}

resource "aws_lb_target_group" "this" {
  count = local.nlb ? 1 : 0

  name                 = var.target_group_name
  port                 = var.service_port
  protocol             = "TCP"
  target_type          = "instance"
  vpc_id               = var.vpc_id
  deregistration_delay = 30
  preserve_client_ip   = true

  # A target that turns unhealthy (its /healthz says draining on SIGTERM) keeps its open
  # connections while it drains, instead of the NLB resetting them: the service sends
  # Connection: close or GOAWAY on each of them during its deregistration delay (30 s) and then
  # drains for up to 10 s.
  target_health_state {
    enable_unhealthy_connection_termination = false
    unhealthy_draining_interval             = 45
  }

  # Readiness: only hosts whose /healthz answers 200 get connections (the health port's, which
  # asks for no client certificate); without a health port, those that accept TCP on the service
  # port.
  health_check {
    enabled             = true
    protocol            = var.health_port == null ? "TCP" : "HTTP"
    port                = var.health_port == null ? "traffic-port" : tostring(var.health_port)
    path                = var.health_port == null ? null : "/healthz"
    matcher             = var.health_port == null ? null : "200"
    interval            = 10
    healthy_threshold   = 3
    unhealthy_threshold = 3
  }

  tags = local.tags
}

resource "aws_lb_listener" "this" {
  count = local.nlb ? 1 : 0

  load_balancer_arn = aws_lb.this[0].arn
  port              = var.service_port
  protocol          = "TCP"
  tags              = local.tags

  default_action {
    type             = "forward"
    target_group_arn = aws_lb_target_group.this[0].arn
  }
}

resource "aws_route53_record" "this" {
  count = local.nlb ? 1 : 0

  zone_id = var.zone_id
  name    = var.dns_name
  type    = "A"

  alias {
    name                   = aws_lb.this[0].dns_name
    zone_id                = aws_lb.this[0].zone_id
    evaluate_target_health = true
  }
}

moved {
  from = aws_lb.this
  to   = aws_lb.this[0]
}

moved {
  from = aws_lb_target_group.this
  to   = aws_lb_target_group.this[0]
}

moved {
  from = aws_lb_listener.this
  to   = aws_lb_listener.this[0]
}

moved {
  from = aws_route53_record.this
  to   = aws_route53_record.this[0]
}
