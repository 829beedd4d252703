variable "name" {
  description = "Name of the fleet, used as the prefix of its resources' names (for example idgen-us-east-1 or idgen-registry). At most 24 characters, so the load balancer's name fits."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,23}$", var.name))
    error_message = "name must be 1-24 lower-case letters, digits or hyphens, starting with a letter."
  }
}

variable "service" {
  description = "The idgen binary this fleet runs: generator, registry, public-id or public-id-gateway. It names the binary, the systemd unit (idgen-<service>) and the Component tag."
  type        = string

  validation {
    condition     = contains(["generator", "registry", "public-id", "public-id-gateway"], var.service)
    error_message = "service must be generator, registry, public-id or public-id-gateway."
  }
}

variable "region" {
  description = "AWS region of the fleet. The service's AWS SDK signs its requests for this region (AWS_REGION in the unit's environment)."
  type        = string
}

variable "service_args" {
  description = "Command-line flags of the service, one list element per token (for example [\"--listen\", \"0.0.0.0:443\"]). Tokens carry no whitespace or quotes."
  type        = list(string)

  validation {
    condition     = alltrue([for a in var.service_args : can(regex("^[^\\s'\"\\\\%$]+$", a))])
    error_message = "service_args tokens must not contain whitespace, quotes, backslashes, % or $."
  }
}

variable "artifact_s3_uri" {
  description = "S3 URI (s3://bucket/key) of the service binary built for linux/arm64. Each host copies it at boot."
  type        = string

  validation {
    condition     = can(regex("^s3://[a-z0-9.-]+/.+$", var.artifact_s3_uri))
    error_message = "artifact_s3_uri must look like s3://bucket/key."
  }
}

variable "config_files" {
  description = "Files the service reads that change only with a release, by file name under /etc/idgen (for example callers.json), each an S3 URI that every host copies at boot. The files are readable by the service user only."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for n, u in var.config_files : can(regex("^[A-Za-z0-9._-]+$", n)) && can(regex("^s3://[a-z0-9.-]+/.+$", u))])
    error_message = "config_files keys must be plain file names and values S3 URIs (s3://bucket/key)."
  }
}

variable "certificate_files" {
  description = "The service's certificate, key and CA files, by file name under /etc/idgen (tls.crt, tls.key, client-ca.pem), each an S3 URI. Every host copies them at boot and again every certificate_refresh_interval, and replaces them all at once when they changed and are valid (each X.key matching X.crt): renew a certificate by writing the new one at the same URI."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for n, u in var.certificate_files : can(regex("^[A-Za-z0-9._-]+\\.(crt|key|pem)$", n)) && can(regex("^s3://[a-z0-9.-]+/.+$", u))])
    error_message = "certificate_files keys must be plain file names ending in .crt, .key or .pem, and values S3 URIs (s3://bucket/key)."
  }
}

variable "inline_files" {
  description = "Files the service reads that Terraform writes, by path under /etc/idgen (a file name, or one folder and a file name: public-id/regions.json), each with its content, written by the boot script. The files are readable by the service user only."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for n, c in var.inline_files : can(regex("^([A-Za-z0-9._-]+/)?[A-Za-z0-9._-]+$", n)) && !strcontains(c, "IDGEN_FILE")])
    error_message = "inline_files keys must be file names under /etc/idgen (at most one folder deep), and contents must not hold the line IDGEN_FILE."
  }
}

variable "secret_environment" {
  description = "Environment variables of the service whose value holds a secret, by name: each is prefix, then the value of the SecureString SSM parameter (read and decrypted at boot through the VPC's SSM endpoint; it must be 16 to 128 letters and digits, so it needs no escaping in a URL), then suffix, in /etc/idgen/service.env (readable by the service user only), which the unit reads. The services take IDGEN_<FLAG> for a flag not given, so a password stays off the command line."
  type = map(object({
    parameter = string
    prefix    = string
    suffix    = string
  }))
  default = {}

  validation {
    condition     = alltrue([for n, s in var.secret_environment : can(regex("^IDGEN_[A-Z0-9_]+$", n)) && can(regex("^/[A-Za-z0-9/_.-]+$", s.parameter)) && can(regex("^[^\\s'\"\\\\%$]*$", s.prefix)) && can(regex("^[^\\s'\"\\\\%$]*$", s.suffix))])
    error_message = "secret_environment keys must look like IDGEN_NAME, parameters like /path/name, and prefix and suffix must not contain whitespace, quotes, backslashes, % or $."
  }
}

variable "secret_kms_key_arn" {
  description = "Customer-managed KMS key of the secret_environment parameters, which the hosts may decrypt; null for the AWS-managed key aws/ssm (whose key policy lets the account's principals decrypt through SSM)."
  type        = string
  default     = null
}

variable "certificate_refresh_interval" {
  description = "How often each host fetches its certificate files again (a systemd time span, for example 15min), with up to 5 minutes of random delay so the fleet does not fetch at once."
  type        = string
  default     = "15min"

  validation {
    condition     = can(regex("^[1-9][0-9]*(s|min|h)$", var.certificate_refresh_interval))
    error_message = "certificate_refresh_interval must look like 30s, 15min or 1h."
  }
}

variable "certificate_reload_signal" {
  description = "Signal sent to the service after its certificate files were replaced; null sends none. The services re-read their certificate, key and client CA on SIGHUP (and by themselves within a second through a watch of their folder, or at each --tls-reload-every), so SIGHUP only makes the reload immediate."
  type        = string
  default     = "SIGHUP"

  validation {
    condition     = var.certificate_reload_signal == null || contains(["SIGHUP", "SIGUSR1", "SIGUSR2"], coalesce(var.certificate_reload_signal, "none"))
    error_message = "certificate_reload_signal must be null, SIGHUP, SIGUSR1 or SIGUSR2."
  }
}

variable "s3_kms_key_arn" {
  description = "KMS key that encrypts the artifact and config objects (SSE-KMS), which the hosts may decrypt; null when the objects use S3-managed keys."
  type        = string
  default     = null
}

variable "policy_json" {
  description = "IAM policy (JSON) of the service's own data, attached to the hosts' role; the ASG waits for it, so a host never starts without its grants."
  type        = string
}

variable "vpc_id" {
  description = "VPC of the fleet."
  type        = string
}

variable "vpc_cidr" {
  description = "CIDR of the VPC. The load balancer's health checks come from addresses in it."
  type        = string

  validation {
    condition     = can(cidrnetmask(var.vpc_cidr)) && !endswith(var.vpc_cidr, "/0")
    error_message = "vpc_cidr must be an IPv4 CIDR narrower than /0."
  }
}

variable "subnet_ids" {
  description = "Private subnets of the fleet and of its load balancer, one per Availability Zone."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) >= 2 && length(var.subnet_ids) == length(distinct(var.subnet_ids))
    error_message = "subnet_ids must name at least two distinct subnets (one per Availability Zone)."
  }
}

variable "caller_cidrs" {
  description = "IPv4 CIDRs allowed to reach the service port. The load balancer preserves client addresses, so this is where callers are, including callers that fail over from other regions. CIDRs that name the same network (10.0.0.1/16 and 10.0.0.0/16) make one rule. Empty only when caller_security_groups names the callers."
  type        = list(string)

  validation {
    condition     = alltrue([for c in var.caller_cidrs : can(cidrnetmask(c)) && !endswith(c, "/0")])
    error_message = "caller_cidrs must be IPv4 CIDRs, none of them /0."
  }
}

variable "caller_security_groups" {
  description = "Security groups allowed to reach the service port, by a name of the caller's choosing (keys are known at plan time, the IDs may not be): a load balancer that does not preserve client addresses (the customer gateway's ALB) is admitted by its security group."
  type        = map(string)
  default     = {}
}

variable "peer_cidrs" {
  description = "IPv4 CIDRs of the peers the service calls over HTTPS (the generators: the registry's VPC); the hosts may reach nothing else but the AWS APIs of their VPC endpoints."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.peer_cidrs : can(cidrnetmask(c)) && !endswith(c, "/0")])
    error_message = "peer_cidrs must be IPv4 CIDRs, none of them /0."
  }
}

variable "egress_peers" {
  description = "Peers the hosts call on a port of their own, by a name of the caller's choosing (known at plan time): each a description, a port, and either the peer's security group or its IPv4 CIDR (the public-ID fleets: their region's Redis on 6379; the gateway: the upstreams its routes name). One egress rule each."
  type = map(object({
    description       = string
    port              = number
    security_group_id = optional(string)
    cidr_ipv4         = optional(string)
  }))
  default = {}

  validation {
    condition     = alltrue([for k, p in var.egress_peers : (p.security_group_id == null) != (p.cidr_ipv4 == null) && (p.cidr_ipv4 == null || can(cidrnetmask(coalesce(p.cidr_ipv4, "0.0.0.0/0"))) && !endswith(coalesce(p.cidr_ipv4, "/0"), "/0"))])
    error_message = "each of egress_peers needs exactly one of security_group_id and cidr_ipv4, and a CIDR must be IPv4 and narrower than /0."
  }
}

variable "endpoints_security_group_id" {
  description = "Security group of the VPC's interface endpoints (modules/endpoints): SSM, CloudWatch, STS and KMS. DynamoDB and S3 are reached through the gateway endpoints' prefix lists."
  type        = string
}

variable "service_port" {
  description = "Port of the service: the load balancer listens on it and passes TCP through to the same port on the hosts, where mutual TLS ends (with load_balancer none: the port the caller's load balancer sends to)."
  type        = number
  default     = 443
}

variable "health_port" {
  description = "Plaintext port serving /healthz, checked over HTTP by the load balancer (readiness: only hosts answering 200 get traffic; the Auto Scaling group replaces only hosts EC2 finds impaired), and admitted from the VPC (the load balancer's checks, and Prometheus scraping /metrics there). null: the service has no plaintext health port, and the load balancer checks that the service port accepts TCP connections."
  type        = number
  default     = null
}

variable "instance_type" {
  description = "EC2 instance type; must support arm64 (Graviton), since the binary is built for linux/arm64."
  type        = string
  default     = "c7g.large"
}

variable "capacity" {
  description = "Hosts of the group: its min size, desired capacity and max size (min <= desired <= max). Change them here (through the roots' fleets in live/idgen.tfvars, then plan and apply): a capacity set by hand is put back by the next apply. The vCPU quota check counts max, plus the instance refresh's headroom."
  type = object({
    min     = number
    desired = number
    max     = number
  })

  validation {
    condition     = alltrue([for n in [var.capacity.min, var.capacity.desired, var.capacity.max] : n >= 0 && floor(n) == n]) && var.capacity.max >= 1 && var.capacity.min <= var.capacity.desired && var.capacity.desired <= var.capacity.max
    error_message = "capacity needs whole numbers with min <= desired <= max and max >= 1."
  }
}

variable "ami_id" {
  description = "AMI of the hosts (Amazon Linux 2023, arm64, of the fleet's region), pinned: a new image rolls the fleet out by instance refresh only when this changes, never because a newer image was released. The plan checks that it is an arm64 image."
  type        = string

  validation {
    condition     = can(regex("^ami-[0-9a-f]{8}([0-9a-f]{9})?$", var.ami_id))
    error_message = "ami_id must be an AMI ID (ami- and 8 or 17 hex digits)."
  }
}

variable "quota_vcpus_elsewhere" {
  description = "vCPUs that the region's other fleets and workloads of this account need at their peak from the same EC2 quota (running On-Demand Standard instances, L-1216C47A): the plan stops, before the group is created, when this fleet's peak (max size plus the instance refresh's headroom) and these do not fit the quota."
  type        = number
  default     = 0

  validation {
    condition     = var.quota_vcpus_elsewhere >= 0
    error_message = "quota_vcpus_elsewhere must not be negative."
  }
}

variable "boot_dependencies" {
  description = "IDs of what the hosts need at boot that is made outside this module: the VPC's endpoints (S3 and DynamoDB gateways, the SSM, CloudWatch, STS and KMS interface endpoints) and their security group's rules. The Auto Scaling group waits for them, so no host boots before it can copy its release and reach SSM."
  type        = list(string)
  default     = []
}

variable "refresh_alarms" {
  description = "Names of the CloudWatch alarms that stop an instance refresh and roll it back to the previous launch template version when one goes into ALARM: the region's alarms of this fleet (its healthy and unhealthy hosts, its errors)."
  type        = list(string)

  validation {
    condition     = length(var.refresh_alarms) > 0
    error_message = "refresh_alarms must name at least one alarm: an instance refresh without an alarm gate cannot roll back by itself."
  }
}

variable "refresh_checkpoints" {
  description = "Percentages of the group replaced at which an instance refresh pauses for refresh_checkpoint_delay, increasing, the last 100: the alarms have that long to go off before the refresh goes on."
  type        = list(number)
  default     = [10, 50, 100]

  validation {
    condition     = length(var.refresh_checkpoints) > 0 && alltrue([for i, p in var.refresh_checkpoints : p > 0 && p <= 100 && (i == 0 || p > var.refresh_checkpoints[max(i - 1, 0)])]) && contains(var.refresh_checkpoints, 100)
    error_message = "refresh_checkpoints must be increasing percentages from 1 to 100, the last 100."
  }
}

variable "refresh_checkpoint_delay" {
  description = "Seconds an instance refresh waits at each checkpoint."
  type        = number
  default     = 600
}

variable "root_volume_size" {
  description = "Size of the encrypted root volume, in GiB."
  type        = number
  default     = 20
}

variable "ebs_kms_key_arn" {
  description = "KMS key of the root volume; null for the account's default EBS key."
  type        = string
  default     = null
}

variable "load_balancer" {
  description = "internal-nlb: the fleet's own internal network load balancer, target group and private DNS record (target_group_name, zone_id and dns_name are then required). none: nothing of its own; the Auto Scaling group registers its hosts with target_group_arns, made by the calling module (the customer gateway behind its internet-facing ALB)."
  type        = string
  default     = "internal-nlb"

  validation {
    condition     = contains(["internal-nlb", "none"], var.load_balancer)
    error_message = "load_balancer must be internal-nlb or none."
  }
}

variable "target_group_arns" {
  description = "With load_balancer none: the target groups the Auto Scaling group registers its hosts with."
  type        = list(string)
  default     = []
}

variable "target_group_name" {
  description = "Name of the load balancer's target group (unique per region and account). The runbooks find the generator fleet as targetgroup/idgen-workers/... null with load_balancer none."
  type        = string
  default     = null
}

variable "zone_id" {
  description = "Private Route 53 hosted zone of the endpoint record; null with load_balancer none."
  type        = string
  default     = null
}

variable "dns_name" {
  description = "Fully qualified name of the endpoint record (an alias of the load balancer) in zone_id; null with load_balancer none."
  type        = string
  default     = null
}

variable "min_healthy_percentage" {
  description = "During an instance refresh, the share of the fleet that stays in service."
  type        = number
  default     = 90
}

variable "max_healthy_percentage" {
  description = "During an instance refresh, the most hosts in service and launching, as a share of the desired capacity: above 100, new hosts are launched before the ones they replace (at least one), which the vCPU quota check counts."
  type        = number
  default     = 110

  validation {
    condition     = var.max_healthy_percentage >= 100 && var.max_healthy_percentage <= 200
    error_message = "max_healthy_percentage must be from 100 to 200."
  }
}

variable "health_check_grace_period" {
  description = "Seconds after launch before EC2's status checks count for the group, and the instance refresh's warm-up: boot, clock sync and the first lease."
  type        = number
  default     = 300
}

variable "deletion_protection" {
  description = "Whether the load balancer is protected from deletion."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags added to every resource and propagated to the hosts. Service=idgen is always set (the runbooks target hosts by it)."
  type        = map(string)
  default     = {}
}
