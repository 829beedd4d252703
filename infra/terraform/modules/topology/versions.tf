terraform {
  # No provider at all: this module plans offline, so its checks run anywhere Terraform does.
  required_version = ">= 1.5.0"
}
