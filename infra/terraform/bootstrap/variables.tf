variable "region" {
  description = "Region of this state bucket and lock table: the root is applied once per region, and each region's roots keep their state in their own region's (the registry root in the home region's), so one region's S3 or DynamoDB outage leaves the other regions' roots plannable. idgenctl infra --dir bootstrap --state-region R gives it."
  type        = string

  validation {
    condition     = can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]$", var.region))
    error_message = "region must be an AWS region name, like eu-west-1."
  }
}

variable "noncurrent_version_days" {
  description = "Days a replaced version of a state file is kept (the bucket is versioned: an earlier state can be restored)."
  type        = number
  default     = 365
}

variable "tags" {
  description = "Tags added to every resource through the provider's default tags."
  type        = map(string)
  default     = {}
}
