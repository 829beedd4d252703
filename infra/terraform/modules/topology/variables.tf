variable "regions" {
  description = "Regions by AWS region name: each with its region number (0-7, the 3 region bits of the v2 layout; never reused) and its failover peer (a region in this map)."
  type = map(object({
    number = number
    peer   = string
  }))
  default = {
    "us-east-1"      = { number = 0, peer = "us-west-2" }
    "us-west-2"      = { number = 1, peer = "us-east-1" }
    "eu-west-1"      = { number = 2, peer = "us-east-1" }
    "ap-northeast-1" = { number = 3, peer = "ap-southeast-1" }
    "ap-southeast-1" = { number = 4, peer = "ap-northeast-1" }
  }
}

variable "retired_numbers" {
  description = "Region numbers of retired regions. A retired number is reserved forever: no region may be given one."
  type        = list(number)
  default     = []
}

variable "endpoint_domain" {
  description = "Private DNS zone of the generator endpoints: a region's endpoint is idgen.<region>.<endpoint_domain>."
  type        = string
  default     = "idgen.internal"
}

variable "endpoint_port" {
  description = "Port of the generator endpoints (mTLS, Connect and REST)."
  type        = number
  default     = 443
}

variable "home_region" {
  description = "The home region: where the registry, the private zone of the endpoints and the v1 lease table are (a region in regions)."
  type        = string
  default     = "us-east-1"
}
