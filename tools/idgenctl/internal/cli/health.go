package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/svc/healthz"
	"github.com/spf13/cobra"
)

func (o *opts) healthCmd() *cobra.Command {
	return &cobra.Command{Use: "health --region R", Short: "each generator's /healthz, lease and clock, checked against the lease table", Args: exactArgs(0),
		Long: "Reads each generator's /healthz and compares every lease it reports held with the region's lease\n" +
			"table: a generator learns of a quarantine, lift or restore fence only at its next renewal, so until\n" +
			"then it shows lease_lost here although its own /healthz says ok. Exit 1 when any is not healthy.\n" +
			"--generators is a list, or REGION=URL pairs (the ones for --region are used); with a plain list and\n" +
			"--region (or IDGEN_REGION), the generators whose /healthz names another region are left out.",
		RunE: func(cmd *cobra.Command, _ []string) error { return o.health(cmd.Context()) }}
}

// healthRow is one generator as health reports it.
type healthRow struct {
	URL    string             `json:"url"`
	Status int                `json:"http_status"`
	Health *healthz.Generator `json:"healthz"`
	Error  string             `json:"error,omitempty"`
	// LeaseLost: the lease table no longer holds what the generator reports (quarantined,
	// lifted, fenced or claimed by another): it stops at its next renewal, or at its fence.
	LeaseLost string `json:"lease_lost,omitempty"`
}

// generatorURLs are the generators of the region: --generators (a list, or REGION=URL pairs),
// else the local stack's.
func (o *opts) generatorURLs() (urls []string, perRegion bool, err error) {
	vals, perRegion := forRegion(o.generators, o.region)
	switch {
	case perRegion && len(vals) == 0:
		return nil, true, usagef("health: --generators names no generator in region %s", o.region)
	case perRegion:
		return vals, true, nil
	case o.generators != "":
		return strings.Split(o.generators, ","), false, nil
	}
	if u, ok := localGenerators[o.region]; ok {
		return []string{u}, false, nil
	}
	return nil, false, usageError{"health: --generators URL,URL is needed outside the local stack"}
}

// fetchHealth reads one generator's /healthz.
func fetchHealth(ctx context.Context, hc *http.Client, u string) healthRow {
	r := healthRow{URL: u}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(u, "/")+"/healthz", nil)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	resp, err := hc.Do(req)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer resp.Body.Close()
	r.Status = resp.StatusCode
	var h healthz.Generator
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&h) == nil {
		r.Health = &h
	}
	return r
}

func (o *opts) health(ctx context.Context) error {
	urls, perRegion, err := o.generatorURLs()
	if err != nil {
		return err
	}
	hc, err := o.httpClient()
	if err != nil {
		return err
	}
	var rows []healthRow
	unhealthy := 0
	tables := map[string]lease.Store{}
	defer func() {
		for _, st := range tables {
			if st != nil {
				st.Close()
			}
		}
	}()
	for _, u := range urls {
		r := fetchHealth(ctx, hc, u)
		// A list of generators of several regions: with --region, only that region's (each
		// /healthz names its region; an unreachable one is kept, it cannot say).
		if r.Health != nil && o.regionSet && !perRegion && r.Health.Region != "" && r.Health.Region != o.region {
			continue
		}
		if r.Status == http.StatusOK && r.Health != nil {
			r.LeaseLost = o.leaseLost(ctx, tables, r.Health)
		}
		if r.Status != http.StatusOK || r.LeaseLost != "" {
			unhealthy++
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return fmt.Errorf("health: no generator of region %s among %s", o.region, o.generators)
	}
	err = o.emit(map[string]any{"region": o.region, "generators": rows}, func(w io.Writer) {
		fmt.Fprintln(w, "GENERATOR\tSTATUS\tREASON\tMACHINE\tFENCE IN\tCLOCK")
		for _, r := range rows {
			if r.Error != "" {
				fmt.Fprintf(w, "%s\tunreachable\t%s\t-\t-\t-\n", r.URL, r.Error)
				continue
			}
			h := r.Health
			if h == nil {
				h = &healthz.Generator{}
			}
			status, reason := h.Status, h.Reason
			machine, fence := "-", "-"
			var ms, fs []string
			for _, l := range h.Leases {
				if l.Held {
					ms = append(ms, fmt.Sprintf("%s:%d", l.Layout, l.Machine))
					fs = append(fs, fmt.Sprintf("%.0fs", float64(l.FenceInMs)/1000))
				}
			}
			if len(ms) > 0 {
				machine, fence = strings.Join(ms, ","), strings.Join(fs, ",")
			}
			clock := "-"
			if c := h.Clock; c != nil {
				clock = fmt.Sprintf("healthy=%v check=%v", c.Healthy, c.Check)
				if c.Problem != "" {
					clock += " problem=" + c.Problem
				}
			}
			if r.LeaseLost != "" {
				status, reason = "lease_lost", r.LeaseLost
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.URL, status, orDash(reason), machine, fence, clock)
		}
	})
	if err == nil && unhealthy > 0 {
		return fmt.Errorf("%d of %d generators in %s are not healthy", unhealthy, len(rows), o.region)
	}
	return err
}

// leaseLost compares each lease a generator's /healthz reports held with the lease table's row
// (when the region's lease store can be read) and says how they differ, or "". A generator
// learns of a quarantine, lift or restore fence only at its next renewal: until then its own
// /healthz still says ok.
func (o *opts) leaseLost(ctx context.Context, tables map[string]lease.Store, h *healthz.Generator) string {
	for _, l := range h.Leases {
		if !l.Held {
			continue
		}
		st, ok := tables[l.Layout]
		if !ok {
			var err error
			if st, err = openLeaseTable(ctx, o.leaseStore, o.region, l.Layout); err != nil {
				fmt.Fprintf(o.stderr, "idgenctl: health: lease table of %s not read (%v): generators' own view only\n", l.Layout, err)
				st = nil
			}
			tables[l.Layout] = st
		}
		if st == nil {
			continue
		}
		row, err := st.Get(ctx, l.Machine)
		switch {
		case errors.Is(err, lease.ErrNotFound):
			return fmt.Sprintf("%s:%d has no row in the lease table", l.Layout, l.Machine)
		case err != nil:
			fmt.Fprintf(o.stderr, "idgenctl: health: lease %s:%d not read: %v\n", l.Layout, l.Machine, err)
		case row.Epoch != l.Epoch:
			return fmt.Sprintf("%s:%d epoch %d, the table has epoch %d (%s)", l.Layout, l.Machine, l.Epoch, row.Epoch, row.Holder)
		}
	}
	return ""
}
