variable "region" {
  description = "AWS region name of this idgen region (for example eu-west-1). It must be the region of the aws provider the module is given."
  type        = string
}

variable "regions" {
  description = "Every region of the topology by name, each with its number and failover peer (module.topology.regions): the store file lists them all, since the service writes each mapping to its owner region and that region's peer, and reads the other regions' tables on a local miss."
  type = map(object({
    number = number
    peer   = string
  }))

  validation {
    condition     = alltrue([for name, r in var.regions : contains(keys(var.regions), r.peer) && r.peer != name])
    error_message = "every region's peer must be another region of regions."
  }
}

variable "dynamodb_endpoints" {
  description = "Per region of regions, the URL of its DynamoDB interface endpoint (https://vpce-….dynamodb.<region>.vpce.amazonaws.com: modules/endpoints' dynamodb_endpoint_url), at which this region's programs reach its table, this region's own in its VPC and the others' over the Transit Gateway (the hosts have no way to the internet, and the gateway endpoint serves this region only); null for a region whose root is not applied yet, which the store file then names at an address that never resolves. Every region of regions must be named, and this region's must be a URL."
  type        = map(string)

  validation {
    condition     = alltrue([for r, u in var.dynamodb_endpoints : u == null || startswith(coalesce(u, "-"), "https://")])
    error_message = "dynamodb_endpoints values must be https:// URLs, or null."
  }
}

variable "dynamodb_endpoint_security_group_id" {
  description = "Security group of this region's DynamoDB interface endpoint (modules/endpoints' dynamodb_security_group_id): both fleets' HTTPS egress names it, and the module admits both fleets on it."
  type        = string
}

variable "dns_name" {
  description = "Fully qualified name of the internal API's endpoint record in zone_id (public-id.<region>.<endpoint_domain>); its server certificate must be valid for it."
  type        = string
}

variable "zone_id" {
  description = "Private Route 53 hosted zone of the internal API's endpoint record (the endpoints' zone, associated with every region's VPC)."
  type        = string
}

variable "vpc_id" {
  description = "VPC of the region's public-ID fleets, Redis and load balancers."
  type        = string
}

variable "vpc_cidr" {
  description = "CIDR of the VPC: the load balancers' health checks and the ALB's nodes (the gateway's --trusted-proxies) are in it."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets of the hosts, the internal load balancer and Redis, one in each of the region's three Availability Zones."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) == 3
    error_message = "subnet_ids must name three subnets, one per Availability Zone."
  }
}

variable "public_subnet_ids" {
  description = "Public subnets (routed to an internet gateway) of the customer gateway's internet-facing ALB, one per Availability Zone."
  type        = list(string)

  validation {
    condition     = length(var.public_subnet_ids) >= 2 && length(var.public_subnet_ids) == length(distinct(var.public_subnet_ids))
    error_message = "public_subnet_ids must name at least two distinct subnets (one per Availability Zone)."
  }
}

variable "caller_cidrs" {
  description = "CIDRs of this region's services that call the internal API."
  type        = list(string)
}

variable "failover_caller_cidrs" {
  description = "CIDRs of the callers of every region whose peer this region is: they reach this internal API over Transit Gateway peering while their own region's is down."
  type        = list(string)
}

variable "peer_vpc_cidrs" {
  description = "CIDRs of the other regions' VPCs: HTTPS out to them is the path to their tables' DynamoDB interface endpoints over the Transit Gateway (dynamodb_endpoints), since the VPC's DynamoDB gateway endpoint serves this region's tables only."
  type        = list(string)
  default     = []
}

variable "endpoints_security_group_id" {
  description = "Security group of the VPC's interface endpoints (modules/endpoints): SSM (the Redis AUTH token at boot), CloudWatch, STS, KMS."
  type        = string
}

variable "certificate_arn" {
  description = "ARN of the ACM certificate (in this region) of the customer hostname, which the ALB's HTTPS listener serves."
  type        = string
}

variable "ssl_policy" {
  description = "TLS policy of the ALB's HTTPS listener."
  type        = string
  default     = "ELBSecurityPolicy-TLS13-1-2-2021-06"
}

variable "gateway_upstreams" {
  description = "Where the internal upstreams the gateway's routes name are (their services' IPv4 CIDRs) and the port each is called on: one egress rule each. The gateway reaches nothing else but the AWS APIs, its Redis and the other regions' tables."
  type = list(object({
    description = string
    cidr        = string
    port        = number
  }))
  default = []
}

variable "public_id_artifact_s3_uri" {
  description = "S3 URI of the public-id binary (linux/arm64)."
  type        = string
}

variable "gateway_artifact_s3_uri" {
  description = "S3 URI of the public-id-gateway binary (linux/arm64)."
  type        = string
}

variable "callers_s3_uri" {
  description = "S3 URI of the internal API's callers file (JSON: trust domain, callers, quotas)."
  type        = string
}

variable "routes_s3_uri" {
  description = "S3 URI of the gateway's route table (JSON, libs/routes; idgenctl routes check lints it)."
  type        = string
}

variable "tls_cert_s3_uri" {
  description = "S3 URI of the internal API's server certificate (PEM), valid for dns_name. The hosts fetch it again every 15 minutes: renew it in place."
  type        = string
}

variable "tls_key_s3_uri" {
  description = "S3 URI of the internal API's private key (PEM); keep it SSE-KMS encrypted and give s3_kms_key_arn."
  type        = string
}

variable "client_ca_s3_uri" {
  description = "S3 URI of the CA (PEM) that signs callers' client certificates."
  type        = string
}

variable "s3_kms_key_arn" {
  description = "KMS key of the SSE-KMS objects above; null when they use S3-managed keys."
  type        = string
  default     = null
}

variable "resources" {
  description = "Resource prefixes the internal API publishes (--resources)."
  type        = list(string)
  default     = ["ord"]

  validation {
    condition     = length(var.resources) > 0 && alltrue([for r in var.resources : can(regex("^[a-z]{2,8}$", r))])
    error_message = "resources must be lower-case prefixes of 2 to 8 letters."
  }
}

variable "public_id_capacity" {
  description = "The internal API's (public-id) Auto Scaling group: min size, desired capacity and max size, spread over the three Availability Zones. Changed here (live/idgen.tfvars), then plan and apply."
  type = object({
    min     = number
    desired = number
    max     = number
  })
  default = { min = 3, desired = 3, max = 6 }
}

variable "gateway_capacity" {
  description = "The customer gateway's (public-id-gateway) Auto Scaling group: min size, desired capacity and max size, spread over the three Availability Zones. Changed here (live/idgen.tfvars), then plan and apply."
  type = object({
    min     = number
    desired = number
    max     = number
  })
  default = { min = 3, desired = 3, max = 6 }
}

variable "ami_id" {
  description = "AMI of both fleets (Amazon Linux 2023 arm64 of this region), pinned: changing it rolls them by instance refresh, gated on their alarms."
  type        = string
}

variable "boot_dependencies" {
  description = "IDs of the VPC endpoints (and their security group's rules) the hosts need at boot that the caller makes: both Auto Scaling groups wait for them. Empty when they exist already."
  type        = list(string)
  default     = []
}

variable "quota_vcpus_elsewhere" {
  description = "vCPUs the region's other fleets and workloads of the account need at their peak from the EC2 quota L-1216C47A, besides these two fleets: the plan stops when they do not fit together."
  type        = number
  default     = 0
}

variable "instance_type" {
  description = "Instance type of both fleets (arm64)."
  type        = string
  default     = "c7g.large"
}

variable "gateway_port" {
  description = "The gateway's customer port (--listen, plain HTTP): the ALB's target group sends to it and checks /healthz on it."
  type        = number
  default     = 8080
}

variable "gateway_metrics_port" {
  description = "The gateway's operator port (--metrics-listen: /metrics and /healthz), admitted from the VPC only, never from the ALB or the internet."
  type        = number
  default     = 9090
}

variable "table_kms_key_arn" {
  description = "Customer-managed KMS key of the idgen-public-ids table; null for the AWS-managed DynamoDB key."
  type        = string
  default     = null
}

variable "redis_auth_parameter" {
  description = "Name of the SecureString SSM parameter (in this region) holding the Redis AUTH token, 16 to 128 letters and digits, written once by an operator before the first apply (see the README). Terraform reads it for the replication group; the hosts read it at boot."
  type        = string

  validation {
    condition     = can(regex("^/[A-Za-z0-9/_.-]+$", var.redis_auth_parameter))
    error_message = "redis_auth_parameter must be an SSM parameter name like /idgen/eu-west-1/public-id/redis-auth."
  }
}

variable "redis_auth_kms_key_arn" {
  description = "Customer-managed KMS key of the AUTH token's parameter; null for the AWS-managed key aws/ssm."
  type        = string
  default     = null
}

variable "redis_node_type" {
  description = "ElastiCache node type of the regional Redis."
  type        = string
  default     = "cache.r7g.large"
}

variable "redis_nodes" {
  description = "Nodes of the replication group: one primary and the rest replicas, each in another Availability Zone (Multi-AZ with automatic failover needs at least 2)."
  type        = number
  default     = 2

  validation {
    condition     = var.redis_nodes >= 2 && var.redis_nodes <= 6 && floor(var.redis_nodes) == var.redis_nodes
    error_message = "redis_nodes must be 2 to 6: Multi-AZ with automatic failover needs a replica."
  }
}

variable "redis_engine_version" {
  description = "Redis OSS engine version (7.x)."
  type        = string
  default     = "7.1"

  validation {
    condition     = can(regex("^7\\.[0-9]+$", var.redis_engine_version))
    error_message = "redis_engine_version must be a Redis OSS 7.x version such as 7.1."
  }
}

variable "redis_kms_key_arn" {
  description = "Customer-managed KMS key of Redis's encryption at rest; null for the AWS-managed ElastiCache key."
  type        = string
  default     = null
}

variable "redis_maintenance_window" {
  description = "Weekly maintenance window of the replication group (UTC, ddd:hh24:mi-ddd:hh24:mi)."
  type        = string
  default     = "sun:05:00-sun:06:00"
}

variable "access_log_days" {
  description = "Days the ALB's access logs are kept in their bucket."
  type        = number
  default     = 90
}

variable "alarm_actions" {
  description = "ARNs (SNS topics in this region) notified when an alarm fires or clears."
  type        = list(string)
  default     = []
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
