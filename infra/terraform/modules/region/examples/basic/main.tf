# One idgen region (eu-west-1, number 2, peer us-east-1), taking its number, peer and endpoint
# from the topology module as the live configuration does.

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

module "topology" {
  source = "../../../topology"
}

module "region" {
  source = "../.."

  region   = "eu-west-1"
  number   = module.topology.regions["eu-west-1"].number
  peer     = module.topology.regions["eu-west-1"].peer
  endpoint = module.topology.regions["eu-west-1"].endpoint

  registry_url = module.topology.registry_url

  vpc_id       = "vpc-0123456789abcdef0"
  vpc_cidr     = "10.2.0.0/16"
  subnet_ids   = ["subnet-0aaaaaaaaaaaaaaa0", "subnet-0bbbbbbbbbbbbbbb0", "subnet-0ccccccccccccccc0"]
  caller_cidrs = ["10.2.0.0/16"]
  # No region has eu-west-1 as its peer, so only its own callers reach it.
  failover_caller_cidrs = []
  zone_id               = "Z0123456789EXAMPLE"

  # Out: the VPC's interface endpoints (modules/endpoints) and the registry's VPC in us-east-1.
  endpoints_security_group_id = "sg-0123456789abcdef0"
  registry_cidrs              = ["10.0.0.0/16"]

  artifact_s3_uri  = "s3://example-idgen-releases-eu-west-1/v1.0.0/bin/generator"
  tls_cert_s3_uri  = "s3://example-idgen-tls-eu-west-1/eu-west-1.crt"
  tls_key_s3_uri   = "s3://example-idgen-tls-eu-west-1/eu-west-1.key"
  client_ca_s3_uri = "s3://example-idgen-tls-eu-west-1/client-ca.pem"
  callers_s3_uri   = "s3://example-idgen-releases-eu-west-1/v1.0.0/callers/generator.json"

  # Pinned per region: a new image is a change here, rolled out by instance refresh.
  ami_id   = "ami-0e3a1b2c3d4e5f607"
  capacity = { min = 24, desired = 24, max = 30 }

  alarm_actions = ["arn:aws:sns:eu-west-1:123456789012:idgen-oncall"]
}

output "endpoint" {
  description = "Endpoint of the example region."
  value       = module.region.endpoint
}

output "alarm_names" {
  description = "The example region's alarms."
  value       = module.region.alarm_names
}
