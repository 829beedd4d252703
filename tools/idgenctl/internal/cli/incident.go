package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/svc/storespec"
	"github.com/spf13/cobra"
)

// quarantineAWS is the AWS CLI form of a quarantine (the design's playbook): holder QUARANTINED,
// expiry 2100-01-01, epoch + 1.
func quarantineAWS(regionName, table string, m int) string {
	return fmt.Sprintf(`aws dynamodb update-item --region %s --table-name %s --key '{"machine_id": {"N": "%d"}}' `+
		`--update-expression "SET #h = :q, lease_expiry = :far ADD lease_epoch :one" --expression-attribute-names '{"#h": "holder"}' `+
		`--expression-attribute-values '{":q": {"S": "QUARANTINED"}, ":far": {"N": "4102444800000"}, ":one": {"N": "1"}}'`,
		regionName, table, m)
}

// dynamoStore tells whether --lease-store names a DynamoDB store for the region.
func dynamoStore(spec, regionName string) bool {
	if vals, per := forRegion(spec, regionName); per {
		if len(vals) != 1 {
			return false
		}
		spec = vals[0]
	}
	sp, err := storespec.Parse("--lease-store", spec, storespec.SQLite, storespec.DynamoDB)
	return err == nil && sp.Kind == storespec.DynamoDB
}

// incidentOpts are incident's own flags.
type incidentOpts struct {
	*opts
	window time.Duration
}

func (o *opts) incidentCmd() *cobra.Command {
	ic := &incidentOpts{opts: o}
	c := idCommand("incident ID", "a duplicate ID: decode it, who held its machine number then, and the quarantine to run (changes nothing)", ic.incident)
	c.Flags().DurationVar(&ic.window, "window", time.Hour, "lease-history events shown either side of the ID's time")
	return c
}

// incident is the duplicate-ID procedure's steps 2 to 4 for one ID: decode it, find who held its
// machine number in its region around its time, and print the quarantine to run. It changes
// nothing.
func (o *incidentOpts) incident(ctx context.Context, s string) error {
	id, sc, err := o.idAndSchedule(s)
	if err != nil {
		return err
	}
	d, err := sc.Decode(id)
	if err != nil {
		return err
	}
	rn := o.names(ctx)
	dec := decodedJSON(d, rn)
	regionLine := fmt.Sprintf("- (layout %s has no region field: the global v1 table, read in %s)", d.Layout, o.region)
	table := lease.TableV2
	if d.HasRegion {
		name := rn.name(d.Region)
		if name == unassigned {
			return fmt.Errorf("incident %s: region number %d is %s (%s): no generator of this platform made it, or the registry lost a region",
				dec.ID, d.Region, unassigned, rn.source)
		}
		o.region, o.table, regionLine = name, "v2", rn.describe(d.Region)
	} else {
		o.table, table = "v1", lease.TableV1
	}

	// Step 3: the lease history of that number in that region, around the ID's time.
	var (
		doc     map[string]any
		answer  string
		evs     []historyEvent
		current *leaseOut
		holders []string
		histErr error
	)
	st, err := o.openLeases(ctx)
	if err == nil {
		defer st.Close()
		var last *lease.Event
		var around []lease.Event
		if last, around, err = lease.WhoHeld(ctx, st, d.Machine, d.Time, o.window); err == nil {
			doc, answer, evs = o.whoHeldDoc(d.Machine, d.Time, last, around)
			if last != nil && last.Holder != lease.QuarantineHolder {
				holders = append(holders, last.Holder)
			}
			for _, e := range around {
				if e.Kind == lease.KindClaim && !slices.Contains(holders, e.Holder) {
					holders = append(holders, e.Holder)
				}
			}
			if r, gerr := st.Get(ctx, d.Machine); gerr == nil {
				l := leaseOf(r, time.Now())
				current = &l
			} else if !errors.Is(gerr, lease.ErrNotFound) {
				err = gerr
			}
		}
	}
	if err != nil {
		histErr = fmt.Errorf("lease history of number %d in %s: %w", d.Machine, o.region, err)
	}

	// Step 4: what to run.
	ctl := fmt.Sprintf("idgenctl leases quarantine %d --region %s", d.Machine, o.region)
	if o.table == "v1" {
		ctl += " --table v1"
	}
	next := map[string]string{"idgenctl": ctl}
	aws := ""
	if dynamoStore(o.leaseStore, o.region) { // the AWS CLI form applies to DynamoDB only
		aws = quarantineAWS(o.region, table, d.Machine)
		next["aws"] = aws
	}
	out := map[string]any{"id": dec, "lease_history": doc, "current_lease": current, "holders": holders, "next": next}
	if histErr != nil {
		out["lease_history_error"] = histErr.Error()
	}
	err = o.emit(out, func(w io.Writer) {
		fmt.Fprintf(w, "duplicate ID %s\n", dec.ID)
		fmt.Fprintf(w, "  created_at\t%s (layout %s)\n", dec.CreatedAt, dec.Layout)
		fmt.Fprintf(w, "  region\t%s\n", regionLine)
		fmt.Fprintf(w, "  machine\t%d\n", dec.Machine)
		fmt.Fprintf(w, "  sequence\t%d\n", dec.Sequence)
		fmt.Fprintln(w)
		if histErr != nil {
			fmt.Fprintf(w, "who held it: unknown: %v\n", histErr)
		} else {
			fmt.Fprintf(w, "who held number %d in %s (lease history, %s either side):\n", d.Machine, o.region, o.window)
			fmt.Fprintln(w, answer)
			eventTable(w, evs)
			if current != nil {
				fmt.Fprintf(w, "now: number %d is %s, holder %s, epoch %d, lease expiry %s\n", d.Machine, current.State, current.Holder, current.Epoch, current.LeaseExpiry)
			} else {
				fmt.Fprintf(w, "now: number %d has no lease row (never claimed in this table)\n", d.Machine)
			}
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "contain (nothing was changed; run one of these, then stop the holders and take their hosts out of service):")
		fmt.Fprintln(w, "  "+ctl)
		if aws != "" {
			fmt.Fprintln(w, "  "+aws)
		}
		if len(holders) > 0 {
			fmt.Fprintf(w, "holders to stop: %s\n", joinComma(holders))
		}
	})
	if err == nil && histErr != nil {
		return exitError{code: 1, msg: histErr.Error()}
	}
	return err
}

func joinComma(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}
