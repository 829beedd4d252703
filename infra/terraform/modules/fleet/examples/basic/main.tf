# A two-host fleet of the registry binary behind an internal NLB, with TCP health checks.

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
  region = "us-east-1"
}

# What the service itself may do: here, the registry driver's actions on an existing table.
data "aws_iam_policy_document" "service" {
  statement {
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Scan", "dynamodb:UpdateItem"]
    resources = ["arn:aws:dynamodb:us-east-1:123456789012:table/idgen-regions"]
  }
}

module "fleet" {
  source = "../.."

  name    = "idgen-example"
  service = "registry"
  region  = "us-east-1"

  service_args = [
    "--listen", "0.0.0.0:443",
    "--store", "dynamodb:https://dynamodb.us-east-1.amazonaws.com",
    "--tls-cert", "/etc/idgen/tls.crt",
    "--tls-key", "/etc/idgen/tls.key",
    "--client-ca", "/etc/idgen/client-ca.pem",
    "--callers", "/etc/idgen/callers.json",
  ]
  artifact_s3_uri = "s3://example-idgen-releases-us-east-1/v1.0.0/bin/registry"
  config_files = {
    "callers.json" = "s3://example-idgen-releases-us-east-1/v1.0.0/callers/registry.json"
  }
  # Fetched at boot and every 15 minutes: renewing a certificate is writing it at the same URI.
  certificate_files = {
    "tls.crt"       = "s3://example-idgen-tls-us-east-1/registry.crt"
    "tls.key"       = "s3://example-idgen-tls-us-east-1/registry.key"
    "client-ca.pem" = "s3://example-idgen-tls-us-east-1/client-ca.pem"
  }
  policy_json = data.aws_iam_policy_document.service.json

  vpc_id     = "vpc-0123456789abcdef0"
  vpc_cidr   = "10.0.0.0/16"
  subnet_ids = ["subnet-0aaaaaaaaaaaaaaa0", "subnet-0bbbbbbbbbbbbbbb0", "subnet-0ccccccccccccccc0"]
  # The callers are the VPC itself, where the TCP health checks on 443 come from too: the two
  # make one ingress rule.
  caller_cidrs = ["10.0.0.0/16"]
  # The VPC's interface endpoints (modules/endpoints); DynamoDB and S3 through its gateways.
  endpoints_security_group_id = "sg-0123456789abcdef0"

  instance_type = "t4g.small"
  # Pinned: a new image is a change here, rolled out by instance refresh.
  ami_id   = "ami-0e1a2b3c4d5e6f708"
  capacity = { min = 2, desired = 2, max = 3 }
  # An instance refresh pauses at each checkpoint and rolls back when one of these goes off.
  refresh_alarms = ["idgen-example-unhealthy-hosts"]

  target_group_name = "idgen-example"
  zone_id           = "Z0123456789EXAMPLE"
  dns_name          = "example.idgen.internal"
}

output "fqdn" {
  description = "Name of the example fleet's endpoint."
  value       = module.fleet.fqdn
}
