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
