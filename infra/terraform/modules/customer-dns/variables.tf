variable "region" {
  description = "AWS region name of this idgen region: the latency record's region and set identifier."
  type        = string
}

variable "zone_id" {
  description = "Public Route 53 hosted zone of the customer hostname."
  type        = string
}

variable "hostname" {
  description = "The customer hostname (for example api.example.com): one latency record per region under this name."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$", var.hostname))
    error_message = "hostname must be a lower-case DNS name such as api.example.com."
  }
}

variable "lb_dns_name" {
  description = "DNS name of the region's customer ALB."
  type        = string
}

variable "lb_zone_id" {
  description = "Route 53 zone ID of the ALB's DNS name."
  type        = string
}

variable "health_check_path" {
  description = "Path Route 53's health checkers ask for over HTTPS on the ALB: the gateway's /healthz (200 while the store answers; 503 when it does not, and from the start of a drain)."
  type        = string
  default     = "/healthz"
}

variable "request_interval" {
  description = "Seconds between one health checker's requests: 10 (fast) or 30."
  type        = number
  default     = 10

  validation {
    condition     = contains([10, 30], var.request_interval)
    error_message = "request_interval must be 10 or 30."
  }
}

variable "failure_threshold" {
  description = "Consecutive failed (or passed) checks that make the region unhealthy (or healthy again)."
  type        = number
  default     = 3
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
