terraform {
  required_version = "= 1.5.7"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "= 5.100.0"
    }
  }

  # After a region's first apply (with local state, see README.md) this root's own state of that
  # region moves into the bucket it made, key bootstrap/terraform.tfstate. Partial configuration,
  # from backend.<region>.hcl.
  backend "s3" {}
}
