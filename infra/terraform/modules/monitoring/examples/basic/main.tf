# One region's monitoring: the Prometheus workspace with idgen's alert rules, its alert manager,
# and the alarm topic subscribed to the on-call service.

terraform {
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 6.0"
    }
  }
}

provider "aws" {
  region = "eu-west-1"
}

module "monitoring" {
  source = "../.."

  name   = "idgen-eu-west-1"
  region = "eu-west-1"

  alarm_subscriptions = [{ protocol = "https", endpoint = "https://events.oncall.example.com/integration/sns/idgen-eu-west-1" }]

  prometheus_s3_uri       = "s3://example-idgen-releases-eu-west-1/v1.4.0/bin/prometheus"
  cloudwatch_agent_s3_uri = "s3://example-idgen-releases-eu-west-1/v1.4.0/bin/amazon-cloudwatch-agent.rpm"
  scraper_cert_s3_uri     = "s3://example-idgen-tls-eu-west-1/scraper.crt"
  scraper_key_s3_uri      = "s3://example-idgen-tls-eu-west-1/scraper.key"
}

output "alarm_topic_arn" {
  description = "ARN of the example's alarm topic."
  value       = module.monitoring.alarm_topic_arn
}

output "remote_write_url" {
  description = "Where the example region's collectors write."
  value       = module.monitoring.remote_write_url
}
