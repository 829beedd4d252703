# The endpoints of one VPC (us-east-1): gateways for DynamoDB and S3 on the private subnets' route
# tables, interface endpoints for SSM, CloudWatch, STS and KMS, and the DynamoDB interface endpoint
# the other regions' VPCs reach this region's public-ID table at.

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

module "endpoints" {
  source = "../.."

  name            = "idgen-example"
  region          = "us-east-1"
  vpc_id          = "vpc-0123456789abcdef0"
  vpc_cidr        = "10.0.0.0/16"
  subnet_ids      = ["subnet-0aaaaaaaaaaaaaaa0", "subnet-0bbbbbbbbbbbbbbb0", "subnet-0ccccccccccccccc0"]
  route_table_ids = ["rtb-0aaaaaaaaaaaaaaa0", "rtb-0bbbbbbbbbbbbbbb0", "rtb-0ccccccccccccccc0"]

  dynamodb_peer_cidrs = ["10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16", "10.4.0.0/16"]
}

output "security_group_id" {
  description = "The security group the hosts' egress rules name."
  value       = module.endpoints.security_group_id
}

output "dynamodb_endpoint_url" {
  description = "The URL every region's public-ID store file names this region's table at."
  value       = module.endpoints.dynamodb_endpoint_url
}
