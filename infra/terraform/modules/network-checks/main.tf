# What a region's network must be for its hosts and its customer ALB, checked against AWS at plan
# time: the plan stops, naming what is missing, before anything is made in a network that cannot
# carry it. Nothing is created here.

data "aws_region" "current" {}

data "aws_subnet" "private" {
  for_each = toset(var.subnet_ids)

  id = each.key

  lifecycle {
    postcondition {
      condition     = self.vpc_id == var.vpc_id
      error_message = "subnet ${each.key} in ${var.region} is in ${self.vpc_id}, not in the hosts' VPC ${var.vpc_id}."
    }
  }
}

data "aws_subnet" "public" {
  for_each = toset(var.public_subnet_ids)

  id = each.key

  lifecycle {
    postcondition {
      condition     = self.vpc_id == var.vpc_id
      error_message = "public subnet ${each.key} in ${var.region} is in ${self.vpc_id}, not in the hosts' VPC ${var.vpc_id}."
    }
  }
}

# The zones of the subnets: one private subnet per zone, public subnets in two zones at least.
# Read for its postconditions alone.
# tflint-ignore: terraform_unused_declarations
data "aws_availability_zones" "this" {
  state = "available"

  lifecycle {
    precondition {
      condition     = data.aws_region.current.name == var.region
      error_message = "the aws provider given to this module is in ${data.aws_region.current.name}, not ${var.region}."
    }
    postcondition {
      condition     = length(distinct([for s in data.aws_subnet.private : s.availability_zone])) == length(var.subnet_ids)
      error_message = "the hosts' subnets in ${var.region} share zones (${join(", ", [for id, s in data.aws_subnet.private : "${id} in ${s.availability_zone}"])}): give one subnet per Availability Zone."
    }
    postcondition {
      condition     = alltrue([for s in data.aws_subnet.private : contains(self.names, s.availability_zone)])
      error_message = "the hosts' subnets in ${var.region} are in zones that are not available: ${join(", ", [for id, s in data.aws_subnet.private : "${id} in ${s.availability_zone}" if !contains(self.names, s.availability_zone)])}."
    }
    postcondition {
      condition     = length(distinct([for s in data.aws_subnet.public : s.availability_zone])) >= 2
      error_message = "the customer ALB's public subnets in ${var.region} are in one zone (${join(", ", [for id, s in data.aws_subnet.public : "${id} in ${s.availability_zone}"])}): an ALB needs subnets in two Availability Zones at least."
    }
  }
}

# Every fleet instance type, in every zone of the hosts' subnets.
# Read for its postconditions alone.
# tflint-ignore: terraform_unused_declarations
data "aws_ec2_instance_type_offerings" "this" {
  location_type = "availability-zone"

  filter {
    name   = "instance-type"
    values = var.instance_types
  }

  lifecycle {
    postcondition {
      condition     = alltrue(flatten([for id, s in data.aws_subnet.private : [for t in var.instance_types : anytrue([for i, l in self.locations : l == s.availability_zone && self.instance_types[i] == t])]]))
      error_message = "not offered in the zones of the hosts' subnets in ${var.region}: ${join("; ", flatten([for id, s in data.aws_subnet.private : [for t in var.instance_types : "${t} in ${s.availability_zone} (subnet ${id})" if !anytrue([for i, l in self.locations : l == s.availability_zone && self.instance_types[i] == t])]]))}: the fleets cannot launch there; give subnets in zones that offer them, or other instance types."
    }
  }
}

# The public subnets' route tables: the customer ALB is reached from the internet through an
# internet gateway.
# Read for its postconditions alone.
# tflint-ignore: terraform_unused_declarations
data "aws_route_table" "public" {
  for_each = toset(var.public_subnet_ids)

  subnet_id = each.key

  lifecycle {
    postcondition {
      condition     = anytrue([for r in self.routes : r.cidr_block == "0.0.0.0/0" && try(startswith(r.gateway_id, "igw-"), false)])
      error_message = "public subnet ${each.key} in ${var.region} (route table ${self.route_table_id}) has no route of 0.0.0.0/0 to an internet gateway: the customer ALB in it cannot be reached from the internet."
    }
  }
}
