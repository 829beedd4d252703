terraform {
  required_version = "= 1.5.7"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "= 5.100.0"
    }
  }

  # The state lives in this region's bucket, locked by its table (the bootstrap root applied in
  # eu-west-1). Partial configuration: bucket, region, dynamodb_table and kms_key_id come from
  # infra/terraform/backend.eu-west-1.hcl (written from that bootstrap root's backend_config output),
  # the key from idgenctl infra
  # (live/regions/eu-west-1/terraform.tfstate). Nothing here names the account.
  backend "s3" {}
}
