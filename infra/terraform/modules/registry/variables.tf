variable "schedule" {
  description = "Layout schedule a new registry starts with: v2, or v1-v2 during the cutover from the v1 layout."
  type        = string
  default     = "v2"

  validation {
    condition     = contains(["v2", "v1-v2"], var.schedule)
    error_message = "schedule must be v2 or v1-v2."
  }
}

variable "region" {
  description = "AWS region of the registry (the home region). It must be the region of the aws provider the module is given."
  type        = string
}

variable "vpc_id" {
  description = "VPC of the registry service (in the home region)."
  type        = string
}

variable "vpc_cidr" {
  description = "CIDR of the VPC (the load balancer's health checks come from it)."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets of the registry service, one per Availability Zone."
  type        = list(string)
}

variable "caller_cidrs" {
  description = "CIDRs allowed to reach the registry: every region's generators (they read it at start-up) and the operators' admin hosts."
  type        = list(string)
}

variable "endpoints_security_group_id" {
  description = "Security group of the VPC's interface endpoints (modules/endpoints), which the registry hosts' egress rules name."
  type        = string
}

variable "zone_id" {
  description = "Private Route 53 hosted zone of the registry's record."
  type        = string
}

variable "dns_name" {
  description = "Fully qualified name of the registry's endpoint (for example registry.idgen.internal); its server certificate must be valid for it."
  type        = string
}

variable "artifact_s3_uri" {
  description = "S3 URI of the registry binary (linux/arm64)."
  type        = string
}

variable "tls_cert_s3_uri" {
  description = "S3 URI of the registry's server certificate (PEM), valid for dns_name. The hosts fetch it again every 15 minutes: renew it in place."
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
  description = "S3 URI of the registry's callers file (callers with \"admin\": true may change the registry)."
  type        = string
}

variable "s3_kms_key_arn" {
  description = "KMS key of the SSE-KMS objects above; null when they use S3-managed keys."
  type        = string
  default     = null
}

variable "capacity" {
  description = "The registry's Auto Scaling group: min size, desired capacity and max size. Changed here (live/idgen.tfvars), then plan and apply."
  type = object({
    min     = number
    desired = number
    max     = number
  })
  default = { min = 2, desired = 2, max = 3 }
}

variable "ami_id" {
  description = "AMI of the registry hosts (Amazon Linux 2023 arm64 of the home region), pinned: changing it rolls them by instance refresh, gated on the registry's alarm."
  type        = string
}

variable "health_port" {
  description = "Port of the registry's plaintext /healthz and /metrics (--health-listen), which the load balancer checks over HTTP and the VPC may reach."
  type        = number
  default     = 8081
}

variable "boot_dependencies" {
  description = "IDs of the VPC endpoints (and their security group's rules) the hosts need at boot that the caller makes: the Auto Scaling group waits for them."
  type        = list(string)
  default     = []
}

variable "quota_vcpus_elsewhere" {
  description = "vCPUs the home region's other fleets and workloads of the account need at their peak from the EC2 quota L-1216C47A: the plan stops when they and the registry's peak do not fit it."
  type        = number
  default     = 0
}

variable "alarm_actions" {
  description = "ARNs (SNS topics in the home region) notified when the registry's alarm fires or clears."
  type        = list(string)
  default     = []
}

variable "instance_type" {
  description = "Instance type of the registry hosts (arm64)."
  type        = string
  default     = "t4g.small"
}

variable "table_kms_key_arn" {
  description = "Customer-managed KMS key of the registry table; null for the AWS-managed DynamoDB key."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
