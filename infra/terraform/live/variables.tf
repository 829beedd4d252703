variable "schedule" {
  description = "Layout schedule: v2, or v1-v2 during the cutover from the v1 layout (which also creates the v1 lease table idgen-leases in the home region)."
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
  description = "Per region name: its VPC, the VPC's CIDR, three private subnets (one per Availability Zone) and the CIDRs of its callers. Every region of the topology needs an entry; the VPCs are joined by Transit Gateway peering outside this configuration."
  type = map(object({
    vpc_id       = string
    vpc_cidr     = string
    subnet_ids   = list(string)
    caller_cidrs = list(string)
  }))
}

variable "operator_cidrs" {
  description = "CIDRs of the operators' hosts that administer the registry (idgenctl)."
  type        = list(string)
  default     = []
}

variable "artifacts_s3_prefix" {
  description = "S3 prefix (s3://bucket/path, no trailing slash) of the release: generator and registry binaries (linux/arm64), the callers files and client CA, and per endpoint its certificate and key. The README lists the layout."
  type        = string

  validation {
    condition     = can(regex("^s3://[a-z0-9.-]+(/[^/]+)*$", var.artifacts_s3_prefix))
    error_message = "artifacts_s3_prefix must look like s3://bucket/path with no trailing slash."
  }
}

variable "s3_kms_key_arn" {
  description = "KMS key of the SSE-KMS release objects (at least the private keys); null when they use S3-managed keys."
  type        = string
  default     = null
}

variable "alarm_actions" {
  description = "Per region name, the SNS topic ARNs (in that region) that the region's alarms notify."
  type        = map(list(string))
  default     = {}
}

variable "tags" {
  description = "Tags added to every resource through the providers' default tags."
  type        = map(string)
  default     = {}
}
