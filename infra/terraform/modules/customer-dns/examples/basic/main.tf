# eu-west-1's latency record of the customer hostname, an alias of its ALB.

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

module "customer_dns" {
  source = "../.."

  region      = "eu-west-1"
  zone_id     = "Z0PUBLIC0123456789"
  hostname    = "api.example.com"
  lb_dns_name = "idgen-gw-eu-west-1-0123456789.eu-west-1.elb.amazonaws.com"
  lb_zone_id  = "Z32O12XQLNTSW2"
}

output "health_check_id" {
  description = "The example region's health check."
  value       = module.customer_dns.health_check_id
}
