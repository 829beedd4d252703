terraform {
  required_version = "= 1.5.7"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "= 5.100.0"
    }
  }

  # After the first apply (with local state, see README.md) this root's own state moves into the
  # bucket it made, key bootstrap/terraform.tfstate. Partial configuration, from backend.hcl.
  backend "s3" {}
}
