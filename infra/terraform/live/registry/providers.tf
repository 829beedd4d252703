# The home region (the topology's home_region; a precondition on the zone holds them equal).
provider "aws" {
  region = "us-east-1"

  default_tags {
    tags = var.tags
  }
}
