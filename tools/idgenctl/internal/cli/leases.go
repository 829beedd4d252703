package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/spf13/cobra"
)

// leasesOpts are the leases commands' own flags.
type leasesOpts struct {
	*opts
	at     string        // who-held --at
	window time.Duration // who-held --window
	yes    bool          // --yes of the commands that change the table
	rules  rulesFlags    // init and set-rules
}

func (o *opts) leasesCmd() *cobra.Command {
	lo := &leasesOpts{opts: o}
	list := &cobra.Command{Use: "list", Short: "every lease row of the region's table, with the table's identity", Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return lo.leasesList(cmd.Context()) }}
	get := o.machineCmd("get N", "one number's lease row", lo.leasesGet)
	quarantine := yesFlag(o.machineCmd("quarantine N", "quarantine a number: nobody can claim or renew it until lifted (asks first)", lo.leasesQuarantine), &lo.yes)
	lift := yesFlag(o.machineCmd("lift N", "lift a quarantine: the number is claimable one lease and the margin of the table's rules from now (asks first)", lo.leasesLift), &lo.yes)
	fence := yesFlag(&cobra.Command{Use: "fence-restore --region R", Short: "the restore fence of a region's restored lease table (asks first)", Args: exactArgs(0),
		Long: "Fences every lease row that is not quarantined (epoch + 1, lease expiry now + lease + margin of the\n" +
			"table's rules: nobody claims until then) and writes the table's own ID into its metadata row. The\n" +
			"rules come from the metadata row, or from the lease history when the restored table has none. The\n" +
			"region must be named with --region on the command line.",
		RunE: func(cmd *cobra.Command, _ []string) error { return lo.leasesFenceRestore(cmd.Context()) }}, &lo.yes)
	whoHeld := o.machineCmd("who-held N", "who held a number at a time (--at), from the lease history", lo.leasesWhoHeld)
	whoHeld.Flags().StringVar(&lo.at, "at", "", "time, RFC 3339 (default: now)")
	whoHeld.Flags().DurationVar(&lo.window, "window", time.Hour, "events shown either side of --at")
	rf := &lo.rules
	initCmd := &cobra.Command{Use: "init --lease D --margin D", Short: "write the table's rules (lease length, renew bounds, fence margin) into its metadata row, once", Args: exactArgs(0),
		Long: "Writes the lease table's rules into its metadata row, as its first holder would, before any holder\n" +
			"starts (the bootstrap step after the tables are created). Every holder then must use this lease\n" +
			"and margin and renew within the bounds, and lift and fence-restore read them. Rules equal to the\n" +
			"table's change nothing; different ones are refused (set-rules changes them).",
		RunE: func(cmd *cobra.Command, _ []string) error { return lo.leasesInit(cmd.Context(), rf) }}
	setRules := yesFlag(&cobra.Command{Use: "set-rules --lease D --margin D --region R", Short: "change the table's rules; refused while any number is held (asks first)", Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return lo.leasesSetRules(cmd.Context(), rf) }}, &lo.yes)
	for _, c := range []*cobra.Command{initCmd, setRules} {
		c.Flags().DurationVar(&rf.lease, "lease", 0, "the table's lease length (required)")
		c.Flags().DurationVar(&rf.margin, "margin", 0, "the table's fence margin (required)")
		c.Flags().DurationVar(&rf.renewMin, "renew-min", 0, "the shortest renewal interval a holder may use (default: a thirtieth of the lease)")
		c.Flags().DurationVar(&rf.renewMax, "renew-max", 0, "the longest renewal interval a holder may use (default: a third of the lease)")
	}
	return group("leases", "the region's lease table: list, get, quarantine, lift, fence-restore, who-held, init, set-rules",
		list, get, quarantine, lift, fence, whoHeld, initCmd, setRules)
}

// rulesFlags are the rules leases init and set-rules write.
type rulesFlags struct{ lease, margin, renewMin, renewMax time.Duration }

func (f *rulesFlags) rules(cmd string) (lease.Rules, error) {
	if f.lease <= 0 || f.margin <= 0 {
		return lease.Rules{}, usagef("leases %s: name the table's rules: --lease D and --margin D (the fleet's --lease and --fence-margin)", cmd)
	}
	r := lease.DefaultRules(f.lease, 0, f.margin)
	if f.renewMin > 0 {
		r.RenewMin = f.renewMin
	}
	if f.renewMax > 0 {
		r.RenewMax = f.renewMax
	}
	if err := r.Validate(); err != nil {
		return r, usagef("leases %s: %v", cmd, err)
	}
	return r, nil
}

// operatorName names an operator command in the rules events it writes to the history.
func operatorName(cmd string) string {
	u := os.Getenv("USER")
	if u == "" {
		u = "unknown"
	}
	return fmt.Sprintf("idgenctl leases %s (%s)", cmd, u)
}

// rulesOut is a table's rules as idgenctl shows them.
type rulesOut struct {
	Lease    string `json:"lease"`
	RenewMin string `json:"renew_min"`
	RenewMax string `json:"renew_max"`
	Margin   string `json:"margin"`
}

func rulesDoc(r lease.Rules) *rulesOut {
	if r.IsZero() {
		return nil
	}
	return &rulesOut{r.Lease.String(), r.RenewMin.String(), r.RenewMax.String(), r.Margin.String()}
}

// leasesInit writes the table's rules once (idgenctl leases init).
func (o *leasesOpts) leasesInit(ctx context.Context, f *rulesFlags) error {
	r, err := f.rules("init")
	if err != nil {
		return err
	}
	st, err := o.openLeases(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	restored, err := lease.InitTable(ctx, st, r, time.Now(), operatorName("init"))
	if err != nil {
		return fmt.Errorf("leases init: table %s in %s: %w", o.tableName(), o.region, err)
	}
	meta, _ := st.Meta(ctx)
	return o.emit(map[string]any{"region": o.region, "table": o.tableName(), "rules": rulesDoc(meta.Rules), "restored": restored}, func(w io.Writer) {
		fmt.Fprintf(w, "table %s in %s: rules %v\n", o.tableName(), o.region, meta.Rules)
		if restored {
			fmt.Fprintf(w, "the table is a restore: nothing is claimed from it until the restore fence (idgenctl leases fence-restore --region %s)\n", o.region)
		}
	})
}

// leasesSetRules changes the table's rules after confirmation, only while no number is held.
func (o *leasesOpts) leasesSetRules(ctx context.Context, f *rulesFlags) error {
	if !o.regionFlag {
		return usageError{"leases set-rules changes the rules of a whole region's lease table: name the region with --region R (the default and IDGEN_REGION are not taken)"}
	}
	r, err := f.rules("set-rules")
	if err != nil {
		return err
	}
	st, err := o.openLeases(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	meta, err := st.Meta(ctx)
	if err != nil {
		return fmt.Errorf("leases set-rules: the table has no metadata row yet (write its rules with leases init): %w", err)
	}
	if meta.Rules == r {
		return o.emit(map[string]any{"rules": rulesDoc(r), "changed": false}, func(w io.Writer) { fmt.Fprintf(w, "the rules are already %v\n", r) })
	}
	err = o.confirm(o.yes, "leases set-rules --region "+o.region, []string{
		fmt.Sprintf("change the rules of table %s in %s:", o.tableName(), o.region),
		fmt.Sprintf("  from %v", meta.Rules),
		fmt.Sprintf("  to   %v", r),
		"refused while any number is held; every holder started with other settings refuses to claim from then on",
	})
	if err != nil {
		return err
	}
	if _, err := lease.SetRules(ctx, st, r, time.Now(), operatorName("set-rules")); err != nil {
		return fmt.Errorf("leases set-rules: %w", err)
	}
	return o.emit(map[string]any{"rules": rulesDoc(r), "changed": true}, func(w io.Writer) {
		fmt.Fprintf(w, "the rules of table %s in %s are now %v\n", o.tableName(), o.region, r)
	})
}

// machineCmd is a leases command on one machine number.
func (o *opts) machineCmd(use, short string, run func(ctx context.Context, what string, m int) error) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, ValidArgsFunction: cobra.NoFileCompletions}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usagef("leases %s N: want one machine number", cmd.Name())
		}
		return nil
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 0 || n > 1023 {
			return usagef("leases %s: machine number %q must be 0-1023", cmd.Name(), args[0])
		}
		return run(cmd.Context(), cmd.Name(), n)
	}
	return c
}

func (o *opts) openLeases(ctx context.Context) (lease.Store, error) {
	return openLeaseTable(ctx, o.leaseStore, o.region, o.table)
}

// machines is how many machine numbers the table's layout holds: the restore fence writes a row
// for each number the restored table lacks.
func (o *opts) machines() int {
	if o.table == "v1" {
		return idcore.V1().MaxMachine() + 1
	}
	return idcore.V2().MaxMachine() + 1
}

func (o *opts) tableName() string {
	if o.table == "v1" {
		return lease.TableV1
	}
	return lease.TableV2
}

type leaseOut struct {
	Machine     int    `json:"machine"`
	Holder      string `json:"holder"`
	LeaseExpiry string `json:"lease_expiry"`
	ExpiryMs    int64  `json:"lease_expiry_unix_ms"`
	Epoch       int64  `json:"lease_epoch"`
	State       string `json:"state"`
}

// Lease row states as idgenctl shows them.
const (
	stateQuarantined = "quarantined"
	stateFenced      = "fenced" // by the restore fence: claimable at its expiry
	stateLifted      = "lifted" // claimable at its expiry
	stateHeld        = "held"
	stateExpired     = "expired"
)

// leaseOf is a row as shown, without the history: a fenced row shows as held (see leaseStates).
func leaseOf(r lease.Row, now time.Time) leaseOut {
	state := stateExpired
	switch {
	case r.Quarantined():
		state = stateQuarantined
	case r.Holder == lease.LiftedHolder && r.ExpiryUnixMs > now.UnixMilli():
		state = stateLifted
	case r.ExpiryUnixMs > now.UnixMilli():
		state = stateHeld
	}
	return leaseOut{Machine: r.Machine, Holder: r.Holder, ExpiryMs: r.ExpiryUnixMs, Epoch: r.Epoch, State: state,
		LeaseExpiry: time.UnixMilli(r.ExpiryUnixMs).UTC().Format("2006-01-02T15:04:05.000Z")}
}

// fenceLookback bounds the history read to recognise a fenced row: a fence sets the expiry one
// lease and the margin after it ran, so the event lies within that of the row's expiry.
const fenceLookback = 24 * time.Hour

// fenced reports whether a row's expiry was set by the restore fence: the row is not expired and
// the number's last history event is a fence of the row's own epoch. A claim after the fence
// raises the epoch (and writes a claim event), and a fence leaves the holder as it was, so the
// row alone cannot tell a fenced row from a held one.
func fenced(ctx context.Context, st lease.Store, r lease.Row, now time.Time) (bool, error) {
	if r.Quarantined() || r.ExpiryUnixMs <= now.UnixMilli() {
		return false, nil
	}
	evs, err := st.History(ctx, r.Machine, r.ExpiryUnixMs-fenceLookback.Milliseconds(), now.UnixMilli())
	if err != nil {
		return false, err
	}
	if len(evs) == 0 {
		return false, nil
	}
	last := evs[len(evs)-1]
	return last.Kind == lease.KindFence && last.Epoch == r.Epoch && last.ExpiryUnixMs == r.ExpiryUnixMs, nil
}

// leaseState is a row as shown, a fenced row as "fenced". A history that cannot be read is
// reported on stderr and the row shown by itself.
func (o *opts) leaseState(ctx context.Context, st lease.Store, r lease.Row, now time.Time) leaseOut {
	out := leaseOf(r, now)
	if out.State != stateHeld && out.State != stateLifted {
		return out
	}
	f, err := fenced(ctx, st, r, now)
	if err != nil {
		fmt.Fprintf(o.stderr, "idgenctl: lease history of number %d not read (%v): a fenced row shows as %s\n", r.Machine, err, out.State)
	}
	if f {
		out.State = stateFenced
	}
	return out
}

func leaseTable(w io.Writer, ls []leaseOut) {
	fmt.Fprintln(w, "MACHINE\tSTATE\tHOLDER\tEPOCH\tLEASE EXPIRY")
	for _, l := range ls {
		fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%s\n", l.Machine, l.State, l.Holder, l.Epoch, l.LeaseExpiry)
	}
}

func (o *leasesOpts) leasesList(ctx context.Context) error {
	st, err := o.openLeases(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	rows, err := st.List(ctx)
	if err != nil {
		return err
	}
	ls := []leaseOut{}
	for _, r := range rows {
		ls = append(ls, o.leaseState(ctx, st, r, now))
	}
	tid, _ := st.TableID(ctx)
	meta, _ := st.Meta(ctx)
	return o.emit(map[string]any{"region": o.region, "table": o.table, "table_id": tid, "metadata_table_id": meta.TableID, "rules": rulesDoc(meta.Rules), "leases": ls}, func(w io.Writer) {
		fmt.Fprintf(w, "region %s  table %s  table_id %s  metadata names %s\n", o.region, o.table, tid, orDash(meta.TableID))
		if meta.Rules.IsZero() {
			fmt.Fprintln(w, "rules: none yet (the first holder, or idgenctl leases init, writes them)")
		} else {
			fmt.Fprintf(w, "rules: %v\n", meta.Rules)
		}
		leaseTable(w, ls)
	})
}

// getRow reads one number's row; a number never claimed is an error saying so.
func getRow(ctx context.Context, st lease.Store, what string, m int) (lease.Row, error) {
	r, err := st.Get(ctx, m)
	if errors.Is(err, lease.ErrNotFound) {
		return r, fmt.Errorf("leases %s %d: no lease row for that number (never claimed)", what, m)
	}
	return r, err
}

func (o *leasesOpts) leasesGet(ctx context.Context, what string, m int) error {
	st, err := o.openLeases(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := getRow(ctx, st, what, m)
	if err != nil {
		return err
	}
	out := o.leaseState(ctx, st, r, time.Now())
	return o.emit(out, func(w io.Writer) { leaseTable(w, []leaseOut{out}) })
}

const msFormat = "2006-01-02T15:04:05.000Z"

func fmtMs(ms int64) string { return time.UnixMilli(ms).UTC().Format(msFormat) }

// leasesQuarantine quarantines a number after confirmation and writes the quarantine into the
// lease history. Quarantining a number a live holder has is allowed (that is what a quarantine
// is for); the confirmation says so.
func (o *leasesOpts) leasesQuarantine(ctx context.Context, what string, m int) error {
	st, err := o.openLeases(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	where := fmt.Sprintf("number %d in %s (table %s)", m, o.region, o.tableName())
	var plan []string
	r, err := st.Get(ctx, m)
	switch {
	case errors.Is(err, lease.ErrNotFound):
		plan = []string{fmt.Sprintf("quarantine %s: it has no row (never claimed); one is created: holder %s, epoch 1, lease expiry %s",
			where, lease.QuarantineHolder, fmtMs(lease.QuarantineExpiryUnixMs))}
	case err != nil:
		return err
	default:
		cur := o.leaseState(ctx, st, r, now)
		plan = []string{
			fmt.Sprintf("quarantine %s, %s now:", where, cur.State),
			fmt.Sprintf("  holder %s -> %s", r.Holder, lease.QuarantineHolder),
			fmt.Sprintf("  epoch %d -> %d", r.Epoch, r.Epoch+1),
			fmt.Sprintf("  lease expiry %s -> %s", cur.LeaseExpiry, fmtMs(lease.QuarantineExpiryUnixMs)),
		}
		if cur.State == stateHeld {
			plan = append(plan, fmt.Sprintf("number %d is held by a live generator: %s, lease until %s; it stops issuing under it at its next renewal, at the latest at its fence",
				m, r.Holder, cur.LeaseExpiry))
		}
	}
	plan = append(plan, "nobody can claim or renew it until it is lifted (idgenctl leases lift)")
	if rules, _, rerr := lease.TableRules(ctx, st, now); rerr == nil {
		plan = append(plan, fmt.Sprintf("a lift makes it claimable one lease (%v) and the margin (%v) of the table's rules after the lift", rules.Lease, rules.Margin))
	} else {
		plan = append(plan, fmt.Sprintf("the table's rules cannot be read (%v): a lift will refuse until they can", rerr))
	}
	if err := o.confirm(o.yes, fmt.Sprintf("leases quarantine %d", m), plan); err != nil {
		return err
	}
	now = time.Now()
	r, err = st.Quarantine(ctx, m)
	if err != nil {
		return err
	}
	herr := st.AppendHistory(ctx, lease.Event{Machine: m, AtUnixMs: now.UnixMilli(), Kind: lease.KindQuarantine, Holder: r.Holder, Epoch: r.Epoch, ExpiryUnixMs: r.ExpiryUnixMs})
	return o.changed(what, m, r, now, herr)
}

// changed prints a row a command changed; a history event that could not be written fails the
// command (exit 1) after the output: the change stands, but who-held will not show it.
func (o *opts) changed(what string, m int, r lease.Row, now time.Time, historyErr error) error {
	out := leaseOf(r, now)
	if err := o.emit(out, func(w io.Writer) { leaseTable(w, []leaseOut{out}) }); err != nil {
		return err
	}
	if historyErr != nil {
		return fmt.Errorf("leases %s %d: done, but its lease-history event was not written (who-held will not show it): %w", what, m, historyErr)
	}
	return nil
}

// leasesLift lifts a quarantine after confirmation and writes the lift into the lease history.
// The number is claimable one lease and the margin from now: a holder paused through the
// quarantine may still issue up to its own fence until then.
func (o *leasesOpts) leasesLift(ctx context.Context, what string, m int) error {
	st, err := o.openLeases(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := getRow(ctx, st, what, m)
	if err != nil {
		return err
	}
	notQuarantined := fmt.Errorf("leases lift %d: the number is not quarantined", m)
	if !r.Quarantined() {
		return notQuarantined
	}
	rules, from, err := lease.TableRules(ctx, st, time.Now())
	if err != nil {
		return fmt.Errorf("leases lift %d: %w", m, err)
	}
	err = o.confirm(o.yes, fmt.Sprintf("leases lift %d", m), []string{
		fmt.Sprintf("lift the quarantine of number %d in %s (table %s):", m, o.region, o.tableName()),
		fmt.Sprintf("  holder %s -> %s", r.Holder, lease.LiftedHolder),
		fmt.Sprintf("  epoch %d -> %d", r.Epoch, r.Epoch+1),
		fmt.Sprintf("  lease expiry -> one lease (%s) and the margin (%s) of the rules of the %s after it runs: the number is claimable again then", rules.Lease, rules.Margin, from),
	})
	if err != nil {
		return err
	}
	now := time.Now()
	r, _, err = lease.Lift(ctx, st, m, now)
	if errors.Is(err, lease.ErrLost) {
		return notQuarantined
	}
	if err != nil {
		return err
	}
	herr := st.AppendHistory(ctx, lease.Event{Machine: m, AtUnixMs: now.UnixMilli(), Kind: lease.KindLift, Holder: r.Holder, Epoch: r.Epoch, ExpiryUnixMs: r.ExpiryUnixMs})
	return o.changed(what, m, r, now, herr)
}

// leasesFenceRestore runs the restore fence of one region's table after confirmation. The region
// must be named on the command line: the default region is never fenced by accident.
func (o *leasesOpts) leasesFenceRestore(ctx context.Context) error {
	if !o.regionFlag {
		return usageError{"leases fence-restore fences a whole region's lease table: name the region with --region R (the default and IDGEN_REGION are not taken)"}
	}
	st, err := o.openLeases(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	rows, err := st.List(ctx)
	if err != nil {
		return err
	}
	tid, err := st.TableID(ctx)
	if err != nil {
		return err
	}
	meta, _ := st.Meta(ctx)
	now := time.Now()
	rules, from, err := lease.TableRules(ctx, st, now)
	if err != nil {
		return fmt.Errorf("leases fence-restore: %w", err)
	}
	fence, quarantined, live := 0, 0, []string{}
	for _, r := range rows {
		if r.Quarantined() {
			quarantined++
			continue
		}
		fence++
		if l := o.leaseState(ctx, st, r, now); l.State == stateHeld {
			live = append(live, fmt.Sprintf("%d (%s)", r.Machine, r.Holder))
		}
	}
	plan := []string{
		fmt.Sprintf("fence %d of the %d lease rows of table %s in %s (every row not quarantined; %d quarantined rows stay as they are)",
			fence, len(rows), o.tableName(), o.region, quarantined),
		fmt.Sprintf("each: epoch + 1, lease expiry -> one lease (%s) and the margin (%s) of the rules of the %s after it runs; nobody claims any of them until then", rules.Lease, rules.Margin, from),
		fmt.Sprintf("every other number of 0-%d (none has a row: first claimed after the backup, or never): a row held by %s until that same time", o.machines()-1, lease.FencedHolder),
		fmt.Sprintf("metadata row: names table %s (it names %s now), rules %v", tid, orDash(meta.TableID), rules),
	}
	if len(live) > 0 {
		plan = append(plan, fmt.Sprintf("%d numbers are held by live holders, which stop issuing at their next renewal: %s", len(live), joinComma(live)))
	}
	if err := o.confirm(o.yes, "leases fence-restore --region "+o.region, plan); err != nil {
		return err
	}
	now = time.Now()
	n, rules, err := lease.FenceRestore(ctx, st, now, o.machines())
	if err != nil {
		return err
	}
	tid, _ = st.TableID(ctx)
	until := now.Add(rules.Lease + rules.Margin).UTC().Format(time.RFC3339)
	return o.emit(map[string]any{"fenced_rows": n, "table_id": tid, "claimable_after": until}, func(w io.Writer) {
		fmt.Fprintf(w, "fenced %d lease rows; metadata now names table %s; numbers are claimable after %s\n", n, tid, until)
	})
}

func (o *leasesOpts) leasesWhoHeld(ctx context.Context, _ string, m int) error {
	at := time.Now()
	if o.at != "" {
		var err error
		if at, err = time.Parse(time.RFC3339Nano, o.at); err != nil {
			return usagef("--at %q: want RFC 3339, e.g. 2026-11-29T10:00:00Z", o.at)
		}
	}
	st, err := o.openLeases(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	last, around, err := lease.WhoHeld(ctx, st, m, at, o.window)
	if err != nil {
		return err
	}
	doc, answer, evs := o.whoHeldDoc(m, at, last, around)
	return o.emit(doc, func(w io.Writer) {
		fmt.Fprintln(w, answer)
		eventTable(w, evs)
	})
}

// historyEvent is one lease-history event as idgenctl prints it.
type historyEvent struct {
	At     string          `json:"at"`
	Event  lease.EventKind `json:"event"`
	Holder string          `json:"holder"`
	Epoch  int64           `json:"lease_epoch"`
	Expiry string          `json:"lease_expiry"`
}

func eventOf(e lease.Event) historyEvent {
	return historyEvent{fmtMs(e.AtUnixMs), e.Kind, e.Holder, e.Epoch, fmtMs(e.ExpiryUnixMs)}
}

func eventTable(w io.Writer, evs []historyEvent) {
	fmt.Fprintln(w, "AT\tEVENT\tHOLDER\tEPOCH\tLEASE EXPIRY")
	for _, e := range evs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", e.At, e.Event, e.Holder, e.Epoch, e.Expiry)
	}
}

// whoHeldDoc is the answer of leases who-held: its JSON document, its sentence and its events.
func (o *opts) whoHeldDoc(m int, at time.Time, last *lease.Event, around []lease.Event) (map[string]any, string, []historyEvent) {
	doc := map[string]any{"machine": m, "region": o.region, "at": at.UTC().Format(time.RFC3339Nano), "holder": nil}
	answer := fmt.Sprintf("nobody held number %d in %s at %s (no event before it)", m, o.region, at.UTC().Format(time.RFC3339))
	if last != nil {
		doc["holder"] = eventOf(*last)
		if last.Kind == lease.KindClaim {
			answer = fmt.Sprintf("number %d in %s at %s: held by %s (claimed %s, epoch %d; renewals are in the logs)",
				m, o.region, at.UTC().Format(time.RFC3339), last.Holder, eventOf(*last).At, last.Epoch)
		} else {
			answer = fmt.Sprintf("number %d in %s at %s: not held; last event %s by %s at %s", m, o.region,
				at.UTC().Format(time.RFC3339), last.Kind, last.Holder, eventOf(*last).At)
		}
	}
	evs := []historyEvent{}
	for _, e := range around {
		evs = append(evs, eventOf(e))
	}
	doc["events"] = evs
	return doc, answer, evs
}
