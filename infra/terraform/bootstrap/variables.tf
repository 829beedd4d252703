variable "region" {
  description = "Region of the state bucket and the lock table (every root's backend uses them, whatever region it deploys to)."
  type        = string
  default     = "us-east-1"
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
