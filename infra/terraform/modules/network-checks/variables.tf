variable "region" {
  description = "AWS region of the VPC (named in the messages). It must be the region of the aws provider the module is given."
  type        = string
}

variable "vpc_id" {
  description = "The VPC of the region's hosts and customer ALB."
  type        = string
}

variable "subnet_ids" {
  description = "The hosts' private subnets, one per Availability Zone: each must be in the VPC, in a zone of its own, where every one of instance_types is offered."
  type        = list(string)

  validation {
    condition     = length(var.subnet_ids) > 0
    error_message = "subnet_ids must name the hosts' subnets."
  }
}

variable "public_subnet_ids" {
  description = "The customer ALB's public subnets, in at least two Availability Zones: each must be in the VPC and route 0.0.0.0/0 to an internet gateway (by an explicit association of its route table)."
  type        = list(string)

  validation {
    condition     = length(var.public_subnet_ids) >= 2
    error_message = "public_subnet_ids must name at least two subnets (an ALB needs two Availability Zones)."
  }
}

variable "instance_types" {
  description = "Instance types the fleets in subnet_ids launch: each must be offered in every subnet's zone."
  type        = list(string)

  validation {
    condition     = length(var.instance_types) > 0
    error_message = "instance_types must name the fleets' instance types."
  }
}
