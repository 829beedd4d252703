variable "name" {
  description = "Prefix of the endpoints' security group name and Name tags (for example idgen-us-east-1)."
  type        = string
}

variable "region" {
  description = "AWS region of the VPC (the endpoints' service names are com.amazonaws.<region>.<service>). It must be the region of the aws provider the module is given."
  type        = string
}

variable "vpc_id" {
  description = "VPC the endpoints are created in."
  type        = string
}

variable "vpc_cidr" {
  description = "CIDR of the VPC: the interface endpoints admit HTTPS from all of it, since with private DNS they answer for the services' names for every host of the VPC."
  type        = string

  validation {
    condition     = can(cidrnetmask(var.vpc_cidr)) && !endswith(var.vpc_cidr, "/0")
    error_message = "vpc_cidr must be an IPv4 CIDR narrower than /0."
  }
}

variable "subnet_ids" {
  description = "Subnets of the interface endpoints' network interfaces, one per Availability Zone (the hosts' private subnets)."
  type        = list(string)
}

variable "route_table_ids" {
  description = "Route tables of the hosts' subnets: the gateway endpoints (S3, DynamoDB) add their prefix lists' routes to them."
  type        = list(string)

  validation {
    condition     = length(var.route_table_ids) > 0
    error_message = "route_table_ids must name the route tables of the hosts' subnets."
  }
}

variable "gateway_services" {
  description = "Services reached through gateway endpoints (routes to their prefix lists): the lease and registry tables, and the release objects."
  type        = list(string)
  default     = ["dynamodb", "s3"]
}

variable "interface_services" {
  description = "Services reached through interface endpoints with private DNS: Systems Manager (ssm, ssmmessages, ec2messages: Run Command and Session Manager), CloudWatch (monitoring), STS and KMS."
  type        = list(string)
  default     = ["ec2messages", "kms", "monitoring", "ssm", "ssmmessages", "sts"]
}

variable "dynamodb_interface" {
  description = "Whether to create the DynamoDB interface endpoint (no private DNS) and its security group, at which every region's public-ID programs reach this region's public-ID table: in every VPC that holds a region's public-ID fleets."
  type        = bool
  default     = true
}

variable "dynamodb_peer_cidrs" {
  description = "IPv4 CIDRs of the other regions' VPCs, whose public-ID fleets reach the DynamoDB interface endpoint over the Transit Gateway: one ingress rule on 443 each (this VPC's own CIDR is left out; its fleets are admitted by security group, by modules/public-id)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.dynamodb_peer_cidrs : can(cidrnetmask(c)) && !endswith(c, "/0")])
    error_message = "dynamodb_peer_cidrs must be IPv4 CIDRs, none of them /0."
  }
}

variable "dynamodb_interface_tables" {
  description = "Tables of this region the DynamoDB interface endpoint's policy lets its callers use (the public-ID programs' actions: DescribeTable, GetItem, PutItem, Scan)."
  type        = list(string)
  default     = ["idgen-public-ids"]
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
