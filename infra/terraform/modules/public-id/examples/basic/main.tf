# The public-ID programs of one region (eu-west-1), taking the regions and their peers from the
# topology module as the live configuration does.

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

module "public_id" {
  source = "../.."

  region   = "eu-west-1"
  regions  = module.topology.regions
  dns_name = "public-id.eu-west-1.idgen.internal"
  zone_id  = "Z0123456789EXAMPLE"

  vpc_id            = "vpc-0123456789abcdef0"
  vpc_cidr          = "10.2.0.0/16"
  subnet_ids        = ["subnet-0aaaaaaaaaaaaaaa0", "subnet-0bbbbbbbbbbbbbbb0", "subnet-0ccccccccccccccc0"]
  public_subnet_ids = ["subnet-0ddddddddddddddd0", "subnet-0eeeeeeeeeeeeeee0", "subnet-0fffffffffffffff0"]
  caller_cidrs      = ["10.2.0.0/16"]
  # No region has eu-west-1 as its peer, so only its own callers reach it.
  failover_caller_cidrs = []
  # The other regions' VPCs, where their tables' DynamoDB interface endpoints are.
  peer_vpc_cidrs = ["10.0.0.0/16", "10.1.0.0/16", "10.3.0.0/16", "10.4.0.0/16"]

  # Every region's DynamoDB interface endpoint (each region's modules/endpoints), this one's too;
  # null for a region not applied yet.
  dynamodb_endpoints = {
    "us-east-1"      = "https://vpce-0aaaaaaaaaaaaaaa1-1a2b3c4d.dynamodb.us-east-1.vpce.amazonaws.com"
    "us-west-2"      = "https://vpce-0aaaaaaaaaaaaaaa2-2b3c4d5e.dynamodb.us-west-2.vpce.amazonaws.com"
    "eu-west-1"      = "https://vpce-0aaaaaaaaaaaaaaa3-3c4d5e6f.dynamodb.eu-west-1.vpce.amazonaws.com"
    "ap-northeast-1" = "https://vpce-0aaaaaaaaaaaaaaa4-4d5e6f7a.dynamodb.ap-northeast-1.vpce.amazonaws.com"
    "ap-southeast-1" = null
  }
  dynamodb_endpoint_security_group_id = "sg-0123456789abcdef1"

  endpoints_security_group_id = "sg-0123456789abcdef0"
  certificate_arn             = "arn:aws:acm:eu-west-1:123456789012:certificate/01234567-89ab-cdef-0123-456789abcdef"
  redis_auth_parameter        = "/idgen/eu-west-1/public-id/redis-auth"

  public_id_artifact_s3_uri = "s3://example-idgen-releases-eu-west-1/v1.0.0/bin/public-id"
  gateway_artifact_s3_uri   = "s3://example-idgen-releases-eu-west-1/v1.0.0/bin/public-id-gateway"
  callers_s3_uri            = "s3://example-idgen-releases-eu-west-1/v1.0.0/callers/public-id.json"
  routes_s3_uri             = "s3://example-idgen-releases-eu-west-1/v1.0.0/routes/gateway.json"
  tls_cert_s3_uri           = "s3://example-idgen-tls-eu-west-1/public-id.eu-west-1.crt"
  tls_key_s3_uri            = "s3://example-idgen-tls-eu-west-1/public-id.eu-west-1.key"
  client_ca_s3_uri          = "s3://example-idgen-tls-eu-west-1/client-ca.pem"

  # Pinned: a new image is a change here, rolled out by instance refresh.
  ami_id             = "ami-0e3a1b2c3d4e5f607"
  public_id_capacity = { min = 3, desired = 3, max = 6 }
  gateway_capacity   = { min = 3, desired = 3, max = 6 }

  alarm_actions = ["arn:aws:sns:eu-west-1:123456789012:idgen-oncall"]
}

output "store_file" {
  description = "The store file the example region's hosts get."
  value       = module.public_id.store_file
}

output "alarm_names" {
  description = "The example region's public-ID alarms."
  value       = module.public_id.alarm_names
}
