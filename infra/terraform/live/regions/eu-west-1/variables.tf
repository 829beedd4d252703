# The variables every root of live/ takes from one file (live/idgen.tfvars; see example.tfvars).

variable "schedule" {
  description = "Layout schedule: v2, or v1-v2 during the cutover from the v1 layout (which needs the v1 lease table: v1_table = true in the registry root)."
  type        = string
  default     = "v2"

  validation {
    condition     = contains(["v2", "v1-v2"], var.schedule)
    error_message = "schedule must be v2 or v1-v2."
  }
}

variable "endpoint_domain" {
  description = "Private DNS zone of the endpoints: generators at idgen.<region>.<endpoint_domain>, the registry at registry.<endpoint_domain>."
  type        = string
  default     = "idgen.internal"
}

variable "networks" {
  description = "Per region name: its VPC, the VPC's CIDR, three private subnets (one per Availability Zone), their route tables (for the S3 and DynamoDB gateway endpoints), the public subnets of the customer ALB (one per Availability Zone) and the IPv4 CIDRs of its callers. Every region of the topology needs an entry; each region root peers its VPC with the others' through its Transit Gateway (modules/transit). Two regions may share a VPC only if one of them is the home region."
  type = map(object({
    vpc_id            = string
    vpc_cidr          = string
    subnet_ids        = list(string)
    route_table_ids   = list(string)
    public_subnet_ids = list(string)
    caller_cidrs      = list(string)
  }))
}

variable "artifacts_s3_prefix" {
  description = "S3 prefix of the release (s3://bucket/path, no trailing slash), with {region} where the region goes: the hosts reach S3 only through their VPC's gateway endpoint, which serves buckets of its own region, so each region keeps a copy (for example s3://idgen-releases-{region}/v1.4.0). It holds the binaries (linux/arm64), the callers files and the gateway's route table; the README lists the layout."
  type        = string

  validation {
    condition     = can(regex("^s3://[a-z0-9.{}-]+(/[^/]+)*$", var.artifacts_s3_prefix)) && strcontains(var.artifacts_s3_prefix, "{region}")
    error_message = "artifacts_s3_prefix must look like s3://bucket-{region}/path with no trailing slash, with {region} in it."
  }
}

variable "tls_s3_prefix" {
  description = "S3 prefix (with {region}, like artifacts_s3_prefix) of each endpoint's certificate and key and of the client CA, which the hosts fetch at boot and again every 15 minutes: renew a certificate by writing it there. null: <artifacts_s3_prefix>/tls, renewed only with a release."
  type        = string
  default     = null

  validation {
    condition     = var.tls_s3_prefix == null || can(regex("^s3://[a-z0-9.{}-]+(/[^/]+)*$", coalesce(var.tls_s3_prefix, "-"))) && strcontains(coalesce(var.tls_s3_prefix, "-"), "{region}")
    error_message = "tls_s3_prefix must be null or look like s3://bucket-{region}/path with no trailing slash, with {region} in it."
  }
}

variable "s3_kms_key_arn" {
  description = "KMS key of the SSE-KMS objects (at least the private keys), with {region} where the region goes (a multi-region key: arn:aws:kms:{region}:111122223333:key/mrk-…); null when they use S3-managed keys."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags added to every resource through the provider's default tags."
  type        = map(string)
  default     = {}
}

# A region root's own.

variable "alarm_actions" {
  description = "Per region name, the SNS topic ARNs (in that region) that the region's alarms notify; this root uses its own region's entry."
  type        = map(list(string))
  default     = {}
}

variable "customer_hostname" {
  description = "The customer hostname of the public-ID gateway (for example api.example.com): each region's ALB serves it with an ACM certificate issued for it in that region, and each region root adds its latency record under it."
  type        = string
}

variable "customer_zone" {
  description = "Public Route 53 hosted zone of customer_hostname (for example example.com)."
  type        = string
}

variable "public_id_dynamodb_endpoints" {
  description = "Per region of the topology, the URL of its DynamoDB interface endpoint (that region root's output public_id_dynamodb_endpoint, https://vpce-….dynamodb.<region>.vpce.amazonaws.com), at which the public-ID programs reach its table over the Transit Gateway; null for a region whose root is not applied yet (its table is then unreachable, and the publishes it must hold a copy of are refused). Every region must be named; a root uses its own endpoint for its own region, whatever its entry here says."
  type        = map(string)

  validation {
    condition     = alltrue([for r, u in var.public_id_dynamodb_endpoints : u == null || can(regex("^https://vpce-[0-9a-z]+-[0-9a-z]+\\.dynamodb\\.${r}\\.vpce\\.amazonaws\\.com$", coalesce(u, "-")))])
    error_message = "public_id_dynamodb_endpoints values must be null or a region's DynamoDB interface endpoint URL, https://vpce-<id>-<suffix>.dynamodb.<that region>.vpce.amazonaws.com (no public endpoint: the hosts cannot reach it)."
  }
}

variable "gateway_upstreams" {
  description = "Per region name, where the internal upstreams of the customer gateway's routes are (their IPv4 CIDRs) and the port each is called on: the gateways may call nothing else."
  type = map(list(object({
    description = string
    cidr        = string
    port        = number
  })))
  default = {}
}

variable "fleets" {
  description = "Per region name: the AMI every fleet of the region runs (Amazon Linux 2023 arm64 of that region, pinned: changing it rolls the region's fleets by instance refresh, gated on their alarms), and each fleet's capacity (min, desired, max; omitted: the module's default): generator, public_id, gateway, and in the home region registry. Scale a fleet here, then plan and apply: a capacity set by hand is put back by the next apply."
  type = map(object({
    ami_id    = string
    generator = optional(object({ min = number, desired = number, max = number }), { min = 24, desired = 24, max = 30 })
    public_id = optional(object({ min = number, desired = number, max = number }), { min = 3, desired = 3, max = 6 })
    gateway   = optional(object({ min = number, desired = number, max = number }), { min = 3, desired = 3, max = 6 })
    registry  = optional(object({ min = number, desired = number, max = number }), { min = 2, desired = 2, max = 3 })
  }))
}

variable "vcpus_elsewhere" {
  description = "Per root (a region's name, or registry), the vCPUs of running On-Demand Standard instances (EC2 quota L-1216C47A) that the account needs in that root's region outside it, at their peak: in the home region, the registry root's output vcpus_at_max under the home region's name and the home region root's output vcpus_at_max under registry; plus any other workload of the account in the region. Each root's plan stops, before a group is created, when its fleets' peak and these do not fit the region's quota."
  type        = map(number)
  default     = {}
}
