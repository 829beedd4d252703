variable "name" {
  description = "Name of the workspace (its alias) and prefix of the topic and key alias: idgen-<region> for a region root, idgen-registry for the registry root."
  type        = string

  validation {
    condition     = can(regex("^idgen-[a-z0-9-]+$", var.name))
    error_message = "name must look like idgen-<region> or idgen-registry."
  }
}

variable "region" {
  description = "AWS region of the workspace, the topic and the hosts that write to them. It must be the region of the aws provider the module is given."
  type        = string
}

variable "alarm_subscriptions" {
  description = "Subscriptions of the alarm topic (protocol and endpoint, for example https and the on-call service's SNS integration URL, or email): who is told of every CloudWatch alarm and Prometheus alert of the root."
  type = list(object({
    protocol = string
    endpoint = string
  }))
  default = []

  validation {
    condition     = alltrue([for s in var.alarm_subscriptions : contains(["email", "email-json", "http", "https", "lambda", "sms", "sqs", "firehose", "application"], s.protocol)])
    error_message = "each of alarm_subscriptions needs an SNS protocol: email, email-json, http, https, lambda, sms, sqs, firehose or application."
  }
}

variable "log_retention_days" {
  description = "Days CloudWatch Logs keeps the hosts' logs (/idgen/<region>/<service>) and the workspace's; one of the values CloudWatch Logs accepts."
  type        = number
  default     = 90

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be a retention CloudWatch Logs accepts (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288 or 3653)."
  }
}

variable "prometheus_s3_uri" {
  description = "S3 URI of the Prometheus binary (linux/arm64, 3.0 or later: its --agent flag) the hosts run in agent mode, in the region's copy of the release (<artifacts_s3_prefix>/bin/prometheus)."
  type        = string
}

variable "cloudwatch_agent_s3_uri" {
  description = "S3 URI of the Amazon CloudWatch agent's RPM (Amazon Linux, arm64, 1.300070.0 or later: journald collection), in the region's copy of the release (<artifacts_s3_prefix>/bin/amazon-cloudwatch-agent.rpm)."
  type        = string
}

variable "scraper_cert_s3_uri" {
  description = "S3 URI of the client certificate (PEM) with which the collector scrapes /metrics on the mutual-TLS port of the services without a plaintext one (the internal public-ID API): a caller marked \"scraper\": true in their callers files."
  type        = string
}

variable "scraper_key_s3_uri" {
  description = "S3 URI of the scraper certificate's private key (PEM); keep it SSE-KMS encrypted."
  type        = string
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
