locals {
  # Each check is a map of offending region => message, so a failed precondition names them.
  bad_numbers = {
    for name, r in var.regions : name => "region ${name} has number ${r.number}: region numbers are 0-7 (3 bits of the v2 layout)"
    if r.number < 0 || r.number > 7 || floor(r.number) != r.number
  }
  numbers_used = {
    for n in distinct([for r in values(var.regions) : r.number]) :
    n => sort([for name, r in var.regions : name if r.number == n])
  }
  duplicate_numbers = {
    for n, names in local.numbers_used : join(" and ", names) => "regions ${join(" and ", names)} share number ${n}: each region has its own"
    if length(names) > 1
  }
  retired_given = {
    for name, r in var.regions : name => "region ${name} has number ${r.number}, which is retired: a retired number is never reused"
    if contains(var.retired_numbers, r.number)
  }
  bad_peers = {
    for name, r in var.regions : name => (r.peer == name
      ? "region ${name} is its own peer: its callers need another region to fail over to"
    : "region ${name} has peer ${r.peer}, which is not a region in this map")
    if r.peer == name || !contains(keys(var.regions), r.peer)
  }

  endpoints = { for name, r in var.regions : name => "https://idgen.${name}.${var.endpoint_domain}:${var.endpoint_port}" }

  # Per region, the regions whose peer it is: their callers fail over to it.
  failover_sources = {
    for name in keys(var.regions) : name => sort([for other, r in var.regions : other if r.peer == name])
  }
}

locals {
  # Per region, every other region it exchanges traffic with over the Transit Gateway, and why:
  # "failover" (one is the other's peer: its callers fail over there), "registry" (one is the home
  # region: every region's generators read the registry there) and "public-id" (every region's
  # public-ID programs read and write every other region's table). The lower-numbered region of a
  # pair requests the peering; the other accepts it.
  transit_peers = {
    for name, r in var.regions : name => {
      for other, o in var.regions : other => {
        reasons = concat(
          r.peer == other || o.peer == name ? ["failover"] : [],
          name == var.home_region || other == var.home_region ? ["registry"] : [],
          ["public-id"],
        )
        request = r.number < o.number
      } if other != name
    }
  }
}
