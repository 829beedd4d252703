package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/leasestore"
	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/idgen/idgen/libs/svc/storespec"
)

// openLeaseTable opens the lease table of a layout ("v2" or "v1") in a region's lease store. spec
// is --lease-store: sqlite:PATH, dynamodb:ENDPOINT_URL, REGION=STORE pairs, or "" for the local
// stack's .idgen/leases-<region>.db.
func openLeaseTable(ctx context.Context, spec, regionName, layout string) (lease.Store, error) {
	table := lease.TableV2
	if layout == "v1" {
		table = lease.TableV1
	}
	if vals, per := forRegion(spec, regionName); per {
		if len(vals) != 1 {
			return nil, usagef("--lease-store names no single store for region %s (it has %s): pass --region one of those, or add %s=STORE",
				regionName, storeRegions(spec), regionName)
		}
		spec = vals[0]
	}
	local := spec == ""
	if local {
		spec = "sqlite:.idgen/leases-" + regionName + ".db"
	}
	sp, err := storespec.Parse("--lease-store", spec, storespec.SQLite, storespec.DynamoDB)
	if err != nil {
		return nil, usagef("%v, or REGION=STORE pairs", err)
	}
	if sp.Kind == storespec.SQLite {
		if _, err := os.Stat(sp.Where); err != nil {
			if local {
				hint := ""
				if _, err := region.Find(region.Defaults(), regionName); err != nil {
					hint = fmt.Sprintf("; region %q is none of the built-in regions (%s): check --region", regionName, builtinRegionNames())
				}
				return nil, usagef("no lease store for region %s: no --lease-store given, and the local stack's %s does not exist "+
					"(make run creates it); pass --lease-store sqlite:PATH or dynamodb:ENDPOINT_URL (or IDGEN_LEASE_STORE)%s", regionName, sp.Where, hint)
			}
			return nil, fmt.Errorf("lease store %s: %w", sp.Where, err)
		}
	}
	return leasestore.Open(ctx, string(sp.Kind), sp.Where, table)
}

// storeRegions lists the regions of a REGION=STORE flag value.
func storeRegions(spec string) string {
	var names []string
	for _, p := range strings.Split(spec, ",") {
		k, _, _ := strings.Cut(p, "=")
		names = append(names, k)
	}
	return strings.Join(names, ", ")
}

func builtinRegionNames() string {
	var names []string
	for _, r := range region.Defaults() {
		names = append(names, r.Name)
	}
	return strings.Join(names, ", ")
}
