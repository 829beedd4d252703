# The registry service and its table in the home region.

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

module "registry" {
  source = "../.."

  region = "us-east-1"

  vpc_id       = "vpc-0123456789abcdef0"
  vpc_cidr     = "10.0.0.0/16"
  subnet_ids   = ["subnet-0aaaaaaaaaaaaaaa0", "subnet-0bbbbbbbbbbbbbbb0", "subnet-0ccccccccccccccc0"]
  caller_cidrs = ["10.0.0.0/8"]
  zone_id      = "Z0123456789EXAMPLE"
  dns_name     = "registry.idgen.internal"

  # The VPC's interface endpoints (modules/endpoints); DynamoDB and S3 through its gateways.
  endpoints_security_group_id = "sg-0123456789abcdef0"

  artifact_s3_uri  = "s3://example-idgen-releases-us-east-1/v1.0.0/bin/registry"
  tls_cert_s3_uri  = "s3://example-idgen-tls-us-east-1/registry.crt"
  tls_key_s3_uri   = "s3://example-idgen-tls-us-east-1/registry.key"
  client_ca_s3_uri = "s3://example-idgen-tls-us-east-1/client-ca.pem"
  callers_s3_uri   = "s3://example-idgen-releases-us-east-1/v1.0.0/callers/registry.json"

  # Pinned: a new image is a change here, rolled out by instance refresh.
  ami_id   = "ami-0e1a2b3c4d5e6f708"
  capacity = { min = 2, desired = 2, max = 3 }
}

output "url" {
  description = "URL of the example registry."
  value       = module.registry.url
}
