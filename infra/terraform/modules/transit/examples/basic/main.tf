# eu-west-1's Transit Gateway, peered with us-east-1 (which requests: its number is the lower, and
# this side accepts the attachment it made) and ap-northeast-1 (which this side requests: its
# attachment's ID is recorded, so it is routed), and with us-west-2 not yet: its root is not
# applied, so its Transit Gateway is not known, and nothing is requested or routed.

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

module "transit" {
  source = "../.."

  name            = "idgen-eu-west-1"
  region          = "eu-west-1"
  amazon_side_asn = 64514
  vpc_id          = "vpc-0123456789abcdef0"
  vpc_cidr        = "10.2.0.0/16"
  subnet_ids      = ["subnet-0aaaaaaaaaaaaaaa0", "subnet-0bbbbbbbbbbbbbbb0", "subnet-0ccccccccccccccc0"]
  route_table_ids = ["rtb-0aaaaaaaaaaaaaaa0"]

  peers = {
    "us-east-1" = {
      vpc_cidr           = "10.0.0.0/16"
      caller_cidrs       = ["10.0.0.0/16", "10.100.0.0/16"]
      request            = false
      transit_gateway_id = "tgw-0e100000000000001"
      attachment_id      = "tgw-attach-0e1000000000e3001"
    }
    "us-west-2" = {
      vpc_cidr           = "10.1.0.0/16"
      caller_cidrs       = ["10.1.0.0/16"]
      request            = false
      transit_gateway_id = null
      attachment_id      = null
    }
    "ap-northeast-1" = {
      vpc_cidr           = "10.3.0.0/16"
      caller_cidrs       = ["10.3.0.0/16"]
      request            = true
      transit_gateway_id = "tgw-0e400000000000001"
      attachment_id      = "tgw-attach-0e3000000000e4001"
    }
  }
}

output "transit_gateway_id" {
  description = "The Transit Gateway the peers' roots are given."
  value       = module.transit.transit_gateway_id
}

output "peering_attachment_ids" {
  description = "The attachment requested of ap-northeast-1, which its root accepts."
  value       = module.transit.peering_attachment_ids
}

output "routed_peers" {
  description = "us-east-1 (its VPC and its callers' 10.100.0.0/16) and ap-northeast-1; not us-west-2."
  value       = module.transit.routed_peers
}
