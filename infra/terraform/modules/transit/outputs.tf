output "transit_gateway_id" {
  description = "ID of the region's Transit Gateway (created, or the one given): the peers' roots are given it (transit_gateways in live/idgen.tfvars) to request their peerings with this region."
  value       = local.transit_gateway_id
}

output "route_table_id" {
  description = "ID of the Transit Gateway route table of idgen's routes (the VPC attachment and the peerings are associated with it): a callers' VPC attached to this gateway is associated with it and propagates into it to reach the peers."
  value       = aws_ec2_transit_gateway_route_table.this.id
}

output "vpc_attachment_id" {
  description = "ID of the VPC's attachment to the Transit Gateway."
  value       = aws_ec2_transit_gateway_vpc_attachment.this.id
}

output "peering_attachment_ids" {
  description = "Per peer this side requested a peering of, the attachment's ID: the accepter is given it (transit_peering_attachments, keyed <this region>:<peer>), and so is this side, to route to the peer."
  value       = { for p, a in aws_ec2_transit_gateway_peering_attachment.this : p => a.id }
}

output "routed_peers" {
  description = "Per peer routed to (its peering exists on both sides), the CIDRs routed to it through the Transit Gateway."
  value       = { for p in keys(local.ready) : p => local.destinations[p] }
}
