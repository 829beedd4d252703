output "regions" {
  description = "The regions by name, each with its number, its peer and its peer's number."
  value = {
    for name, r in var.regions : name => {
      number      = r.number
      peer        = r.peer
      peer_number = try(var.regions[r.peer].number, null)
      endpoint    = local.endpoints[name]
    }
  }

  precondition {
    condition     = length(local.bad_numbers) == 0
    error_message = join("; ", values(local.bad_numbers))
  }
  precondition {
    condition     = length(local.duplicate_numbers) == 0
    error_message = join("; ", values(local.duplicate_numbers))
  }
  precondition {
    condition     = length(local.retired_given) == 0
    error_message = join("; ", values(local.retired_given))
  }
  precondition {
    condition     = length(local.bad_peers) == 0
    error_message = join("; ", values(local.bad_peers))
  }
}

output "client_config" {
  description = "Per region, the endpoints its callers use in order: the region's own, then its peer's (used only while the region's own fleet is down)."
  value = {
    for name, r in var.regions : name => {
      endpoints = [local.endpoints[name], local.endpoints[r.peer]]
    }
  }

  precondition {
    condition     = length(local.bad_peers) == 0
    error_message = join("; ", values(local.bad_peers))
  }
}

output "failover_sources" {
  description = "Per region, the regions whose peer it is (sorted): their callers fail over to it, so its security group admits them too."
  value       = local.failover_sources

  precondition {
    condition     = length(local.bad_peers) == 0
    error_message = join("; ", values(local.bad_peers))
  }
}

output "home_region" {
  description = "The home region: the registry, the private zone of the endpoints and the v1 lease table are there."
  value       = var.home_region

  precondition {
    condition     = contains(keys(var.regions), var.home_region)
    error_message = "home_region ${var.home_region} is not a region in regions."
  }
}

output "registry_host" {
  description = "Host name of the registry's endpoint (registry.<endpoint_domain>); its server certificate must be valid for it."
  value       = "registry.${var.endpoint_domain}"
}

output "registry_url" {
  description = "URL of the registry, which every region's generators read at start-up."
  value       = "https://registry.${var.endpoint_domain}"
}

output "transit_peers" {
  description = "Per region, every other region it exchanges traffic with over the Transit Gateway: why (reasons: failover, when one is the other's peer; registry, when one is the home region; public-id, always, for the public-ID tables) and whether this region requests the peering (request: its number is the lower) or accepts it."
  value       = local.transit_peers

  precondition {
    condition     = length(local.duplicate_numbers) == 0
    error_message = join("; ", values(local.duplicate_numbers))
  }
}
