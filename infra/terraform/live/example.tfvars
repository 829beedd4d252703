# The variables of every root of live/, for five regions: copy it to idgen.tfvars (idgenctl infra
# passes live/idgen.tfvars to each root) and put in the deployment's own values. The static tests
# evaluate the fleets' security group rules from these values: callers in each region's own VPC,
# as is usual, and operators in a VPC of their own.

artifacts_s3_prefix = "s3://example-idgen-releases-{region}/v1.4.0"
tls_s3_prefix       = "s3://example-idgen-tls-{region}"
s3_kms_key_arn      = "arn:aws:kms:{region}:111122223333:key/mrk-0123456789abcdef0123456789abcdef"

schedule = "v2"

networks = {
  "us-east-1" = {
    vpc_id            = "vpc-0e1000000000000a0"
    vpc_cidr          = "10.0.0.0/16"
    subnet_ids        = ["subnet-0e1000000000000a1", "subnet-0e1000000000000a2", "subnet-0e1000000000000a3"]
    route_table_ids   = ["rtb-0e1000000000000a1", "rtb-0e1000000000000a2", "rtb-0e1000000000000a3"]
    public_subnet_ids = ["subnet-0e1000000000000b1", "subnet-0e1000000000000b2", "subnet-0e1000000000000b3"]
    caller_cidrs      = ["10.0.0.0/16", "10.100.0.0/16"]
  }
  "us-west-2" = {
    vpc_id            = "vpc-0e2000000000000a0"
    vpc_cidr          = "10.1.0.0/16"
    subnet_ids        = ["subnet-0e2000000000000a1", "subnet-0e2000000000000a2", "subnet-0e2000000000000a3"]
    route_table_ids   = ["rtb-0e2000000000000a1", "rtb-0e2000000000000a2", "rtb-0e2000000000000a3"]
    public_subnet_ids = ["subnet-0e2000000000000b1", "subnet-0e2000000000000b2", "subnet-0e2000000000000b3"]
    caller_cidrs      = ["10.1.0.0/16"]
  }
  "eu-west-1" = {
    vpc_id            = "vpc-0e3000000000000a0"
    vpc_cidr          = "10.2.0.0/16"
    subnet_ids        = ["subnet-0e3000000000000a1", "subnet-0e3000000000000a2", "subnet-0e3000000000000a3"]
    route_table_ids   = ["rtb-0e3000000000000a1"]
    public_subnet_ids = ["subnet-0e3000000000000b1", "subnet-0e3000000000000b2", "subnet-0e3000000000000b3"]
    caller_cidrs      = ["10.2.0.0/16"]
  }
  "ap-northeast-1" = {
    vpc_id            = "vpc-0e4000000000000a0"
    vpc_cidr          = "10.3.0.0/16"
    subnet_ids        = ["subnet-0e4000000000000a1", "subnet-0e4000000000000a2", "subnet-0e4000000000000a3"]
    route_table_ids   = ["rtb-0e4000000000000a1", "rtb-0e4000000000000a2", "rtb-0e4000000000000a3"]
    public_subnet_ids = ["subnet-0e4000000000000b1", "subnet-0e4000000000000b2", "subnet-0e4000000000000b3"]
    caller_cidrs      = ["10.3.0.0/16"]
  }
  "ap-southeast-1" = {
    vpc_id            = "vpc-0e5000000000000a0"
    vpc_cidr          = "10.4.0.0/16"
    subnet_ids        = ["subnet-0e5000000000000a1", "subnet-0e5000000000000a2", "subnet-0e5000000000000a3"]
    route_table_ids   = ["rtb-0e5000000000000a1", "rtb-0e5000000000000a2", "rtb-0e5000000000000a3"]
    public_subnet_ids = ["subnet-0e5000000000000b1", "subnet-0e5000000000000b2", "subnet-0e5000000000000b3"]
    caller_cidrs      = ["10.4.0.0/16"]
  }
}

# The registry root's own.
operator_cidrs = ["10.200.0.0/24"]
v1_table       = false

# The region roots' own. The customer hostname's certificate is issued in ACM in every region, and
# each region root adds its latency record of it to the public zone.
customer_hostname = "api.example.com"
customer_zone     = "example.com"

# Every region's DynamoDB interface endpoint, from that region root's output
# public_id_dynamodb_endpoint (terraform -chdir=live/regions/R output -raw public_id_dynamodb_endpoint):
# the public-ID programs reach each region's table there. Before a region's first apply its entry is
# null; apply the region roots one after another, then fill in each URL and apply the others again
# (../README.md, "Applying").
public_id_dynamodb_endpoints = {
  "us-east-1"      = "https://vpce-0e10000000000dd01-1a2b3c4d.dynamodb.us-east-1.vpce.amazonaws.com"
  "us-west-2"      = "https://vpce-0e20000000000dd01-2b3c4d5e.dynamodb.us-west-2.vpce.amazonaws.com"
  "eu-west-1"      = "https://vpce-0e30000000000dd01-3c4d5e6f.dynamodb.eu-west-1.vpce.amazonaws.com"
  "ap-northeast-1" = "https://vpce-0e40000000000dd01-4d5e6f7a.dynamodb.ap-northeast-1.vpce.amazonaws.com"
  "ap-southeast-1" = "https://vpce-0e50000000000dd01-5e6f7a8b.dynamodb.ap-southeast-1.vpce.amazonaws.com"
}

# The services the gateway's routes name (routes/gateway.json), by region.
gateway_upstreams = {
  "us-east-1" = [{ description = "orders", cidr = "10.0.32.0/20", port = 80 }]
  "eu-west-1" = [{ description = "orders", cidr = "10.2.32.0/20", port = 80 }]
}

# Per region: the pinned AMI of its fleets (Amazon Linux 2023 arm64, an image of that region:
# aws ssm get-parameter --region R --name /aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64
# names the newest; changing ami_id rolls the region's fleets by instance refresh, gated on their
# alarms), and each fleet's capacity (min, desired, max; omitted: the default). Scale a fleet here,
# then plan and apply the region's root: a capacity set by hand is put back by the next apply.
fleets = {
  "us-east-1" = {
    ami_id    = "ami-0e1a2b3c4d5e6f708"
    generator = { min = 24, desired = 24, max = 30 }
    public_id = { min = 3, desired = 3, max = 6 }
    gateway   = { min = 3, desired = 3, max = 6 }
    registry  = { min = 2, desired = 2, max = 3 }
  }
  "us-west-2" = {
    ami_id    = "ami-0e2a2b3c4d5e6f708"
    generator = { min = 24, desired = 24, max = 30 }
  }
  "eu-west-1" = {
    ami_id    = "ami-0e3a2b3c4d5e6f708"
    generator = { min = 24, desired = 24, max = 30 }
  }
  "ap-northeast-1" = {
    ami_id    = "ami-0e4a2b3c4d5e6f708"
    generator = { min = 24, desired = 24, max = 30 }
  }
  "ap-southeast-1" = {
    ami_id    = "ami-0e5a2b3c4d5e6f708"
    generator = { min = 24, desired = 24, max = 30 }
  }
}

# What each root's vCPU quota check counts besides its own fleets, in its region: in the home
# region, the registry root's output vcpus_at_max under "us-east-1" and the us-east-1 root's under
# "registry" (0 until that root is applied), plus other workloads of the account.
vcpus_elsewhere = {
  "us-east-1" = 8
  "registry"  = 94
}

alarm_actions = {
  "us-east-1" = ["arn:aws:sns:us-east-1:111122223333:idgen-oncall"]
  "eu-west-1" = ["arn:aws:sns:eu-west-1:111122223333:idgen-oncall"]
}

tags = {
  Team = "idgen"
}

# The network's. Each region root makes its Transit Gateway and peers it with every other region
# (modules/topology's transit_peers): the lower-numbered region of a pair requests, the other
# accepts. Like public_id_dynamodb_endpoints, these are filled in as the roots are applied
# (../README.md, "Applying"): each region's Transit Gateway from its root's output
# transit_gateway_id (null or left out before its first apply), and each peering's attachment,
# keyed <requester>:<accepter>, from the requester root's output transit_peering_attachments.
transit_gateways = {
  "us-east-1"      = "tgw-0e100000000000001"
  "us-west-2"      = "tgw-0e200000000000001"
  "eu-west-1"      = "tgw-0e300000000000001"
  "ap-northeast-1" = "tgw-0e400000000000001"
  "ap-southeast-1" = "tgw-0e500000000000001"
}

transit_peering_attachments = {
  "us-east-1:us-west-2"           = "tgw-attach-0e1000000000e2001"
  "us-east-1:eu-west-1"           = "tgw-attach-0e1000000000e3001"
  "us-east-1:ap-northeast-1"      = "tgw-attach-0e1000000000e4001"
  "us-east-1:ap-southeast-1"      = "tgw-attach-0e1000000000e5001"
  "us-west-2:eu-west-1"           = "tgw-attach-0e2000000000e3001"
  "us-west-2:ap-northeast-1"      = "tgw-attach-0e2000000000e4001"
  "us-west-2:ap-southeast-1"      = "tgw-attach-0e2000000000e5001"
  "eu-west-1:ap-northeast-1"      = "tgw-attach-0e3000000000e4001"
  "eu-west-1:ap-southeast-1"      = "tgw-attach-0e3000000000e5001"
  "ap-northeast-1:ap-southeast-1" = "tgw-attach-0e4000000000e5001"
}

# The registry root's: the callers' VPCs outside networks (us-east-1's 10.100.0.0/16), which the
# private zone of the endpoints is associated with.
caller_vpcs = {
  "us-east-1" = ["vpc-0e1000000000000c0"]
}
