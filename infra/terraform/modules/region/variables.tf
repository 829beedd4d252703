variable "region" {
  description = "AWS region name of this idgen region (for example eu-west-1). It must be the region of the aws provider the module is given."
  type        = string
}

variable "number" {
  description = "Region number (0-7) from the topology module. The generator refuses to start when the registry says otherwise."
  type        = number

  validation {
    condition     = var.number >= 0 && var.number <= 7 && floor(var.number) == var.number
    error_message = "number must be an integer from 0 to 7."
  }
}

variable "peer" {
  description = "Failover peer region from the topology module: where this region's callers go while this region's fleet is down."
  type        = string
}

variable "endpoint" {
  description = "This region's endpoint URL from the topology module (https://<host>:<port>); the module creates the DNS record of its host."
  type        = string

  validation {
    condition     = can(regex("^https://[a-z0-9.-]+(:[0-9]+)?$", var.endpoint))
    error_message = "endpoint must look like https://host or https://host:port."
  }
}

variable "schedule" {
  description = "Layout schedule of the generators: v2, or v1-v2 during the cutover from the v1 layout."
  type        = string
  default     = "v2"

  validation {
    condition     = contains(["v2", "v1-v2"], var.schedule)
    error_message = "schedule must be v2 or v1-v2."
  }
}

variable "registry_url" {
  description = "URL of the region registry; the generators read it at start-up."
  type        = string
}

variable "registry_cidrs" {
  description = "CIDRs where the registry is (its VPC's): the generators' only HTTPS peer besides the AWS APIs of their VPC endpoints."
  type        = list(string)
}

variable "endpoints_security_group_id" {
  description = "Security group of the VPC's interface endpoints (modules/endpoints), which the generators' egress rules name."
  type        = string
}

variable "vpc_id" {
  description = "VPC of the region's fleet."
  type        = string
}

variable "vpc_cidr" {
  description = "CIDR of the VPC (the load balancer's health checks come from it)."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets of the fleet, one in each of the region's three Availability Zones."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) == 3
    error_message = "subnet_ids must name three subnets, one per Availability Zone."
  }
}

variable "caller_cidrs" {
  description = "CIDRs of this region's callers."
  type        = list(string)
}

variable "failover_caller_cidrs" {
  description = "CIDRs of the callers of every region whose peer this region is: they reach this endpoint over Transit Gateway peering while their own region's fleet is down. Empty when no region fails over here."
  type        = list(string)
}

variable "zone_id" {
  description = "Private Route 53 hosted zone of the endpoint record (associated with this region's VPC and its peer's)."
  type        = string
}

variable "artifact_s3_uri" {
  description = "S3 URI of the generator binary (linux/arm64)."
  type        = string
}

variable "tls_cert_s3_uri" {
  description = "S3 URI of the generators' server certificate (PEM), valid for the endpoint's host name. The hosts fetch it again every 15 minutes: renew it in place."
  type        = string
}

variable "tls_key_s3_uri" {
  description = "S3 URI of the server certificate's private key (PEM); keep it SSE-KMS encrypted and give s3_kms_key_arn."
  type        = string
}

variable "client_ca_s3_uri" {
  description = "S3 URI of the CA (PEM) that signs callers' client certificates."
  type        = string
}

variable "callers_s3_uri" {
  description = "S3 URI of the callers file (JSON: trust domain, callers, quotas)."
  type        = string
}

variable "s3_kms_key_arn" {
  description = "KMS key of the SSE-KMS objects above; null when they use S3-managed keys."
  type        = string
  default     = null
}

variable "capacity" {
  description = "The generator fleet's Auto Scaling group: min size, desired capacity and max size (spread over the three Availability Zones). Raise desired (up to max) here, in the region's fleets in live/idgen.tfvars, then plan and apply: a capacity set by hand is put back by the next apply."
  type = object({
    min     = number
    desired = number
    max     = number
  })
  default = { min = 24, desired = 24, max = 30 }
}

variable "ami_id" {
  description = "AMI of the generators (Amazon Linux 2023 arm64 of this region), pinned: changing it rolls the fleet by instance refresh, gated on the region's alarms."
  type        = string
}

variable "boot_dependencies" {
  description = "IDs of the VPC endpoints (and their security group's rules) the hosts need at boot that the caller makes: the Auto Scaling group waits for them. Empty when they exist already (the home VPC's, made by the registry root)."
  type        = list(string)
  default     = []
}

variable "quota_vcpus_elsewhere" {
  description = "vCPUs the region's other fleets (the public-ID programs', in the home region the registry's) and other workloads of the account need at their peak from the EC2 quota L-1216C47A: the plan stops when they and the generators' peak do not fit it."
  type        = number
  default     = 0
}

variable "instance_type" {
  description = "Instance type of the workers (arm64)."
  type        = string
  default     = "c7g.large"
}

variable "health_port" {
  description = "Port of the generators' plaintext /healthz and /metrics (--health-listen)."
  type        = number
  default     = 8081
}

variable "table_kms_key_arn" {
  description = "Customer-managed KMS key of the lease and history tables; null for the AWS-managed DynamoDB key."
  type        = string
  default     = null
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
