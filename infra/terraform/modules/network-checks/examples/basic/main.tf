# The checks of eu-west-1's network: the hosts' three private subnets (c7g.large offered in each
# one's zone) and the customer ALB's three public subnets (routed to an internet gateway).

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

module "network_checks" {
  source = "../.."

  region            = "eu-west-1"
  vpc_id            = "vpc-0123456789abcdef0"
  subnet_ids        = ["subnet-0aaaaaaaaaaaaaaa0", "subnet-0bbbbbbbbbbbbbbb0", "subnet-0ccccccccccccccc0"]
  public_subnet_ids = ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb1", "subnet-0ccccccccccccccc1"]
  instance_types    = ["c7g.large"]
}

output "availability_zones" {
  description = "The hosts' subnets' zones."
  value       = module.network_checks.availability_zones
}
