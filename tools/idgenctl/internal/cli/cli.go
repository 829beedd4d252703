// Package cli is idgenctl: every command, its flags, and its text and JSON output. The output is
// stable: runbooks are written on it.
package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/dynamolease"
	"github.com/idgen/idgen/libs/idcore/lease/sqlitelease"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/flagenv"
	"github.com/idgen/idgen/tools/idgenctl/internal/infra"
)

const usage = `idgenctl: the idgen operators' tool

  idgenctl explain ID                       the bit diagram of an ID, its region named (registry, else built-in list)
  idgenctl decode ID                        an ID's fields, its region named (registry, else built-in list)
  idgenctl dupcheck FILE...                 IDs seen more than once in exported files ("-" for stdin;
                                            --column NAME for CSV): exit 1 when any, 0 when none, 2 unreadable
  idgenctl incident ID                      a duplicate ID: decode it, who held its machine number then,
                                            and the quarantine commands to run next (changes nothing)
  idgenctl regions list|get NAME|add NAME --peer PEER|retire NAME
  idgenctl layouts show
  idgenctl leases list|get N|quarantine N|lift N|fence-restore|who-held N --at TIME   (--region R)
  idgenctl health --region R                each generator's /healthz, lease and clock
  idgenctl callers check FILE               validate a callers file (identities, quotas) before a rollout
  idgenctl infra fmt                        terraform fmt check over infra/terraform
  idgenctl infra validate [--dir D]         init without a backend, validate (D relative to infra/terraform; default live)
  idgenctl infra plan [--region R|--all] [--plan FILE]   init, plan saved to FILE and FILE.json, then the plan guard
  idgenctl infra apply --plan FILE          the plan guard, then apply (refused plans need --i-accept-that-ids-may-repeat)
  idgenctl infra check-plan PLAN.json       the plan guard alone: exit 1 and one line per refused change

Common flags (each also IDGEN_<FLAG>): --output text|json, --schedule v2|v1-v2,
  --registry URL (default http://127.0.0.1:7000), --lease-store sqlite:PATH|dynamodb:URL
  (default: the local stack's .idgen/leases-<region>.db), --table v2|v1, --generators URL,URL,
  --tls-cert/--tls-key/--ca for mutual TLS to the services; --lease-store and --generators also
  take REGION=VALUE pairs (us-east-1=dynamodb:URL,eu-west-1=dynamodb:URL), the ones for --region
  are used (health with a plain list and --region keeps the generators whose /healthz names it); dupcheck: --column NAME, --tmp-dir (default: the system's), --run-ids N (IDs per
  sorted run on disk, default 4194304: 32 MiB); infra: --infra-dir (default: the
  repository's infra/terraform), --terraform (default: .tools/bin/terraform, Terraform 1.5.7).
`

// localGenerators are the local stack's generators (make run).
var localGenerators = map[string]string{"us-east-1": "http://127.0.0.1:7001", "eu-west-1": "http://127.0.0.1:7002"}

type opts struct {
	output, schedule, registry, leaseStore, table, region, generators, peer, at string
	tlsCert, tlsKey, ca                                                         string
	column, tmpDir                                                              string
	runIDs                                                                      int
	infraDir, terraform, tfDir, planFile                                        string
	allRegions, regionSet, override                                             bool
	stderr                                                                      io.Writer
	lease, margin                                                               time.Duration
	window                                                                      time.Duration
	stdout                                                                      io.Writer
}

// Run runs one command and returns the exit code: 0 done, 1 failed, 2 bad usage.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	o := opts{stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("idgenctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.output, "output", "text", "text or json")
	fs.StringVar(&o.schedule, "schedule", "v2", "layout schedule for explain and decode")
	fs.StringVar(&o.registry, "registry", "http://127.0.0.1:7000", "registry URL")
	fs.StringVar(&o.leaseStore, "lease-store", "", "sqlite:PATH or dynamodb:ENDPOINT_URL")
	fs.StringVar(&o.table, "table", "v2", "lease table: v2 (the region's idgen-leases-v2) or v1 (the global idgen-leases)")
	fs.StringVar(&o.region, "region", "us-east-1", "region")
	fs.StringVar(&o.generators, "generators", "", "generator URLs, comma-separated (default: the local stack's)")
	fs.StringVar(&o.peer, "peer", "", "peer region (regions add)")
	fs.StringVar(&o.at, "at", "", "time, RFC 3339 (leases who-held)")
	fs.DurationVar(&o.window, "window", time.Hour, "events shown either side of --at (leases who-held)")
	fs.DurationVar(&o.lease, "lease", 5*time.Minute, "the fleet's lease length (leases fence-restore, leases lift)")
	fs.DurationVar(&o.margin, "margin", 5*time.Second, "extra margin (leases fence-restore, leases lift)")
	fs.StringVar(&o.column, "column", "", "CSV column holding the IDs (dupcheck)")
	fs.StringVar(&o.tmpDir, "tmp-dir", "", "folder for dupcheck's sorted runs (default: the system's)")
	fs.IntVar(&o.runIDs, "run-ids", defaultRunIDs, "IDs per sorted run (dupcheck; memory is 8 bytes each)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "client certificate for mutual TLS")
	fs.StringVar(&o.tlsKey, "tls-key", "", "client key")
	fs.StringVar(&o.ca, "ca", "", "CA of the services' certificates")
	fs.StringVar(&o.infraDir, "infra-dir", "", "infra/terraform (default: found from the working directory up)")
	fs.StringVar(&o.terraform, "terraform", "", "Terraform binary (default: .tools/bin/terraform, else PATH)")
	fs.StringVar(&o.tfDir, "dir", "live", "configuration to validate or plan, relative to infra/terraform")
	fs.StringVar(&o.planFile, "plan", "", "saved plan file (infra plan writes it, infra apply reads it)")
	fs.BoolVar(&o.allRegions, "all", false, "every region (infra plan)")
	fs.BoolVar(&o.override, strings.TrimPrefix(infra.OverrideFlag, "--"), false, "apply a plan the guard refused")
	// Flags may come before, between or after the words of the command.
	var words []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, usage)
				return 0
			}
			fmt.Fprintf(stderr, "idgenctl: %v\n\n%s", err, usage)
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		words = append(words, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.regionSet = set["region"] || getenv(flagenv.Name("region")) != ""
	fs.VisitAll(func(f *flag.Flag) {
		if v := getenv(flagenv.Name(f.Name)); v != "" && !set[f.Name] {
			_ = f.Value.Set(v)
		}
	})
	if o.output != "text" && o.output != "json" {
		fmt.Fprintln(stderr, "idgenctl: --output must be text or json")
		return 2
	}
	if len(words) == 0 || words[0] == "help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	err := o.dispatch(ctx, words)
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(stderr, "idgenctl: %s\n", ee.msg)
		}
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "idgenctl: %v\n\n%s", err, usage)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "idgenctl: %v\n", err)
		return 1
	}
	return 0
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitError ends a command with its own exit code: dupcheck's 1 (duplicates found) and 2
// (unreadable input).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func need(words []string, n int, what string) error {
	if len(words) != n {
		return usageError{fmt.Sprintf("%s: want %d argument(s)", what, n-1)}
	}
	return nil
}

func (o *opts) dispatch(ctx context.Context, w []string) error {
	cmd := w[0]
	if len(w) > 1 && (cmd == "regions" || cmd == "layouts" || cmd == "leases" || cmd == "infra" || cmd == "callers") {
		cmd += " " + w[1]
		w = w[1:]
	}
	switch cmd {
	case "explain":
		if err := need(w, 2, "explain ID"); err != nil {
			return err
		}
		return o.explain(ctx, w[1])
	case "decode":
		if err := need(w, 2, "decode ID"); err != nil {
			return err
		}
		return o.decode(ctx, w[1])
	case "dupcheck":
		if len(w) < 2 {
			return usageError{"dupcheck FILE...: want at least one file (- for stdin)"}
		}
		return o.dupcheck(ctx, w[1:])
	case "incident":
		if err := need(w, 2, "incident ID"); err != nil {
			return err
		}
		return o.incident(ctx, w[1])
	case "regions list":
		return o.regionsList(ctx)
	case "regions get":
		if err := need(w, 2, "regions get NAME"); err != nil {
			return err
		}
		return o.regionsChange(ctx, "get", w[1])
	case "regions add":
		if err := need(w, 2, "regions add NAME --peer PEER"); err != nil {
			return err
		}
		return o.regionsChange(ctx, "add", w[1])
	case "regions retire":
		if err := need(w, 2, "regions retire NAME"); err != nil {
			return err
		}
		return o.regionsChange(ctx, "retire", w[1])
	case "layouts show":
		return o.layouts(ctx)
	case "leases list", "leases get", "leases quarantine", "leases lift", "leases fence-restore", "leases who-held":
		return o.leases(ctx, strings.TrimPrefix(cmd, "leases "), w)
	case "health":
		return o.health(ctx)
	case "callers check":
		if err := need(w, 2, "callers check FILE"); err != nil {
			return err
		}
		return o.callersCheck(w[1])
	case "infra fmt", "infra validate", "infra plan", "infra apply", "infra check-plan":
		return o.infra(ctx, strings.TrimPrefix(cmd, "infra "), w)
	}
	return usageError{fmt.Sprintf("unknown command %q", strings.Join(w, " "))}
}

func (o *opts) emit(v any, text func(io.Writer)) error {
	if o.output == "json" {
		enc := json.NewEncoder(o.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(o.stdout, 0, 4, 2, ' ', 0)
	text(tw)
	return tw.Flush()
}

func (o *opts) sched() (idcore.Schedule, error) { return idcore.ScheduleByName(o.schedule) }

// idAndSchedule parses an ID argument and returns it with the schedule to read it by.
func (o *opts) idAndSchedule(s string) (idcore.ID, idcore.Schedule, error) {
	id, err := idcore.ParseID(s)
	if err != nil {
		return 0, idcore.Schedule{}, err
	}
	sc, err := o.sched()
	return id, sc, err
}

func (o *opts) explain(ctx context.Context, s string) error {
	id, sc, err := o.idAndSchedule(s)
	if err != nil {
		return err
	}
	out, err := sc.Explain(id)
	if err != nil {
		return err
	}
	d, _ := sc.Decode(id)
	rn := o.names(ctx)
	doc := decodedJSON(d, rn)
	return o.emit(doc, func(w io.Writer) {
		fmt.Fprint(w, out)
		if d.HasRegion {
			fmt.Fprintf(w, "region: %s\n", rn.describe(d.Region))
		}
	})
}

type decodedOut struct {
	ID           string  `json:"id"`
	Layout       string  `json:"layout"`
	CreatedAt    string  `json:"created_at"`
	RegionNumber *int    `json:"region_number,omitempty"`
	Machine      int     `json:"machine"`
	Sequence     int     `json:"sequence"`
	Timestamp    int64   `json:"timestamp_ms_since_epoch"`
	Region       *string `json:"region,omitempty"`
	RegionSource string  `json:"region_source,omitempty"`
}

func decodedJSON(d idcore.Decoded, rn regionNames) decodedOut {
	out := decodedOut{ID: d.ID.String(), Layout: d.Layout, CreatedAt: d.Time.Format("2006-01-02T15:04:05.000Z"),
		Machine: d.Machine, Sequence: d.Sequence, Timestamp: d.Timestamp}
	if d.HasRegion {
		n := d.Region
		out.RegionNumber = &n
		name := rn.name(n)
		out.Region, out.RegionSource = &name, rn.sourceWord()
	}
	return out
}

func (o *opts) decode(ctx context.Context, s string) error {
	id, sc, err := o.idAndSchedule(s)
	if err != nil {
		return err
	}
	d, err := sc.Decode(id)
	if err != nil {
		return err
	}
	rn := o.names(ctx)
	out := decodedJSON(d, rn)
	return o.emit(out, func(w io.Writer) {
		fmt.Fprintf(w, "id\t%s\nlayout\t%s\ncreated_at\t%s\n", out.ID, out.Layout, out.CreatedAt)
		if out.RegionNumber != nil {
			fmt.Fprintf(w, "region\t%s\n", rn.describe(*out.RegionNumber))
			fmt.Fprintf(w, "region_number\t%d\n", *out.RegionNumber)
		}
		fmt.Fprintf(w, "machine\t%d\nsequence\t%d\n", out.Machine, out.Sequence)
	})
}

// httpClient returns a client with the mutual TLS settings, if any.
func (o *opts) httpClient() (*http.Client, error) {
	if o.tlsCert == "" && o.ca == "" {
		return &http.Client{Timeout: 10 * time.Second}, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.ca != "" {
		pool, err := auth.CertPool(o.ca)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if o.tlsCert != "" {
		c, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}, nil
}

func (o *opts) registryClient() (idgenv1connect.RegistryServiceClient, error) {
	hc, err := o.httpClient()
	if err != nil {
		return nil, err
	}
	return idgenv1connect.NewRegistryServiceClient(hc, o.registry), nil
}

type regionOut struct {
	Name      string  `json:"name"`
	Number    int32   `json:"number"`
	Peer      string  `json:"peer"`
	Status    string  `json:"status"`
	AddedAt   string  `json:"added_at"`
	RetiredAt *string `json:"retired_at"`
}

func regionOf(r *idgenv1.Region) regionOut {
	out := regionOut{Name: r.GetName(), Number: r.GetNumber(), Peer: r.GetPeer(), Status: r.GetStatus(),
		AddedAt: r.GetAddedAt().AsTime().UTC().Format(time.RFC3339)}
	if r.RetiredAt != nil {
		s := r.GetRetiredAt().AsTime().UTC().Format(time.RFC3339)
		out.RetiredAt = &s
	}
	return out
}

func regionTable(w io.Writer, rs []regionOut) {
	fmt.Fprintln(w, "NUMBER\tNAME\tPEER\tSTATUS\tADDED\tRETIRED")
	for _, r := range rs {
		ret := "-"
		if r.RetiredAt != nil {
			ret = *r.RetiredAt
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", r.Number, r.Name, r.Peer, r.Status, r.AddedAt, ret)
	}
}

func (o *opts) regionsList(ctx context.Context) error {
	c, err := o.registryClient()
	if err != nil {
		return err
	}
	resp, err := c.ListRegions(ctx, connect.NewRequest(&idgenv1.ListRegionsRequest{}))
	if err != nil {
		return fmt.Errorf("registry %s: %w", o.registry, err)
	}
	rs := []regionOut{}
	for _, r := range resp.Msg.GetRegions() {
		rs = append(rs, regionOf(r))
	}
	return o.emit(map[string]any{"regions": rs}, func(w io.Writer) { regionTable(w, rs) })
}

func (o *opts) regionsChange(ctx context.Context, op, name string) error {
	c, err := o.registryClient()
	if err != nil {
		return err
	}
	var r *idgenv1.Region
	switch op {
	case "get":
		resp, e := c.GetRegion(ctx, connect.NewRequest(&idgenv1.GetRegionRequest{Name: name}))
		if err = e; e == nil {
			r = resp.Msg.GetRegion()
		}
	case "add":
		if o.peer == "" {
			return usageError{"regions add NAME needs --peer PEER"}
		}
		resp, e := c.AddRegion(ctx, connect.NewRequest(&idgenv1.AddRegionRequest{Name: name, Peer: o.peer}))
		if err = e; e == nil {
			r = resp.Msg.GetRegion()
		}
	case "retire":
		resp, e := c.RetireRegion(ctx, connect.NewRequest(&idgenv1.RetireRegionRequest{Name: name}))
		if err = e; e == nil {
			r = resp.Msg.GetRegion()
		}
	}
	if err != nil {
		var ce *connect.Error
		if errors.As(err, &ce) {
			return fmt.Errorf("regions %s %s: %s", op, name, ce.Message())
		}
		return err
	}
	out := regionOf(r)
	return o.emit(out, func(w io.Writer) { regionTable(w, []regionOut{out}) })
}

func (o *opts) layouts(ctx context.Context) error {
	c, err := o.registryClient()
	if err != nil {
		return err
	}
	resp, err := c.GetLayouts(ctx, connect.NewRequest(&idgenv1.GetLayoutsRequest{}))
	if err != nil {
		return fmt.Errorf("registry %s: %w", o.registry, err)
	}
	type field struct {
		Name string `json:"name"`
		Bits int32  `json:"bits"`
	}
	type period struct {
		Layout   string  `json:"layout"`
		StartsAt string  `json:"starts_at"`
		Fields   []field `json:"fields"`
	}
	doc := struct {
		Schedule string   `json:"schedule"`
		Periods  []period `json:"periods"`
	}{Schedule: resp.Msg.GetSchedule()}
	for _, p := range resp.Msg.GetPeriods() {
		pp := period{Layout: p.GetLayout(), StartsAt: p.GetStartsAt().AsTime().UTC().Format(time.RFC3339)}
		for _, f := range p.GetFields() {
			pp.Fields = append(pp.Fields, field{f.GetName(), f.GetBits()})
		}
		doc.Periods = append(doc.Periods, pp)
	}
	return o.emit(doc, func(w io.Writer) {
		fmt.Fprintf(w, "schedule %s\n", doc.Schedule)
		fmt.Fprintln(w, "LAYOUT\tSTARTS AT\tFIELDS")
		for _, p := range doc.Periods {
			var fs []string
			for _, f := range p.Fields {
				fs = append(fs, fmt.Sprintf("%s(%d)", f.Name, f.Bits))
			}
			fmt.Fprintf(w, "%s\t%s\t%s\n", p.Layout, p.StartsAt, strings.Join(fs, " "))
		}
	})
}

func (o *opts) openLeases(ctx context.Context) (lease.Store, error) {
	if o.table != "v1" && o.table != "v2" {
		return nil, usageError{"--table must be v2 or v1"}
	}
	return o.openLeaseTable(ctx, o.table)
}

// openLeaseTable opens the lease table of a layout ("v2" or "v1") in the region's lease store.
func (o *opts) openLeaseTable(ctx context.Context, layout string) (lease.Store, error) {
	table := lease.TableV2
	if layout == "v1" {
		table = lease.TableV1
	}
	spec := o.leaseStore
	if vals, per := forRegion(spec, o.region); per {
		if len(vals) != 1 {
			return nil, usageError{fmt.Sprintf("--lease-store names no single store for region %s", o.region)}
		}
		spec = vals[0]
	}
	if spec == "" {
		spec = "sqlite:.idgen/leases-" + o.region + ".db"
	}
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case "sqlite":
		if _, err := os.Stat(arg); err != nil {
			return nil, fmt.Errorf("lease store %s: %w", arg, err)
		}
		return sqlitelease.Open(ctx, arg, table)
	case "dynamodb":
		db, err := dynamolease.NewClient(ctx, arg)
		if err != nil {
			return nil, err
		}
		return dynamolease.New(db, table, lease.TableHistory), nil
	}
	return nil, usageError{fmt.Sprintf("--lease-store %q: want sqlite:PATH or dynamodb:ENDPOINT_URL", spec)}
}

type leaseOut struct {
	Machine     int    `json:"machine"`
	Holder      string `json:"holder"`
	LeaseExpiry string `json:"lease_expiry"`
	ExpiryMs    int64  `json:"lease_expiry_unix_ms"`
	Epoch       int64  `json:"lease_epoch"`
	State       string `json:"state"`
}

func leaseOf(r lease.Row, now time.Time) leaseOut {
	state := "expired"
	switch {
	case r.Quarantined():
		state = "quarantined"
	case r.Holder == lease.LiftedHolder && r.ExpiryUnixMs > now.UnixMilli():
		state = "lifted" // claimable at its expiry
	case r.ExpiryUnixMs > now.UnixMilli():
		state = "held"
	}
	return leaseOut{Machine: r.Machine, Holder: r.Holder, ExpiryMs: r.ExpiryUnixMs, Epoch: r.Epoch, State: state,
		LeaseExpiry: time.UnixMilli(r.ExpiryUnixMs).UTC().Format("2006-01-02T15:04:05.000Z")}
}

func leaseTable(w io.Writer, ls []leaseOut) {
	fmt.Fprintln(w, "MACHINE\tSTATE\tHOLDER\tEPOCH\tLEASE EXPIRY")
	for _, l := range ls {
		fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%s\n", l.Machine, l.State, l.Holder, l.Epoch, l.LeaseExpiry)
	}
}

func machineArg(args []string, what string) (int, error) {
	if len(args) != 2 {
		return 0, usageError{fmt.Sprintf("leases %s N: want one machine number", what)}
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 0 || n > 1023 {
		return 0, usageError{fmt.Sprintf("leases %s: machine number %q must be 0-1023", what, args[1])}
	}
	return n, nil
}

func (o *opts) leases(ctx context.Context, op string, args []string) error {
	st, err := o.openLeases(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	switch op {
	case "list":
		rows, err := st.List(ctx)
		if err != nil {
			return err
		}
		ls := []leaseOut{}
		for _, r := range rows {
			ls = append(ls, leaseOf(r, now))
		}
		tid, _ := st.TableID(ctx)
		meta, _ := st.Meta(ctx)
		return o.emit(map[string]any{"region": o.region, "table": o.table, "table_id": tid, "metadata_table_id": meta, "leases": ls}, func(w io.Writer) {
			fmt.Fprintf(w, "region %s  table %s  table_id %s  metadata names %s\n", o.region, o.table, tid, orDash(meta))
			leaseTable(w, ls)
		})
	case "get", "quarantine", "lift":
		m, err := machineArg(args, op)
		if err != nil {
			return err
		}
		var r lease.Row
		switch op {
		case "get":
			r, err = st.Get(ctx, m)
		case "quarantine":
			if r, err = st.Quarantine(ctx, m); err == nil {
				_ = st.AppendHistory(ctx, lease.Event{Machine: m, AtUnixMs: now.UnixMilli(), Kind: "quarantine", Holder: r.Holder, Epoch: r.Epoch, ExpiryUnixMs: r.ExpiryUnixMs})
			}
		case "lift":
			// Claimable one lease (and the margin) from now: a holder paused through the
			// quarantine may still issue up to its own fence until then.
			if r, err = st.Lift(ctx, m, lease.LiftExpiry(now, o.lease, o.margin)); errors.Is(err, lease.ErrLost) {
				return fmt.Errorf("leases lift %d: the number is not quarantined", m)
			}
			if err == nil {
				_ = st.AppendHistory(ctx, lease.Event{Machine: m, AtUnixMs: now.UnixMilli(), Kind: "lift", Holder: r.Holder, Epoch: r.Epoch, ExpiryUnixMs: r.ExpiryUnixMs})
			}
		}
		if errors.Is(err, lease.ErrNotFound) {
			return fmt.Errorf("leases %s %d: no lease row for that number (never claimed)", op, m)
		}
		if err != nil {
			return err
		}
		out := leaseOf(r, now)
		return o.emit(out, func(w io.Writer) { leaseTable(w, []leaseOut{out}) })
	case "fence-restore":
		n, err := lease.FenceRestore(ctx, st, now, o.lease, o.margin)
		if err != nil {
			return err
		}
		tid, _ := st.TableID(ctx)
		until := now.Add(o.lease + o.margin).UTC().Format(time.RFC3339)
		return o.emit(map[string]any{"fenced_rows": n, "table_id": tid, "claimable_after": until}, func(w io.Writer) {
			fmt.Fprintf(w, "fenced %d lease rows; metadata now names table %s; numbers are claimable after %s\n", n, tid, until)
		})
	case "who-held":
		m, err := machineArg(args, op)
		if err != nil {
			return err
		}
		at := now
		if o.at != "" {
			if at, err = time.Parse(time.RFC3339Nano, o.at); err != nil {
				return usageError{fmt.Sprintf("--at %q: want RFC 3339, e.g. 2026-11-29T10:00:00Z", o.at)}
			}
		}
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
	return usageError{"unknown leases command " + op}
}

// historyEvent is one lease-history event as idgenctl prints it.
type historyEvent struct {
	At     string `json:"at"`
	Event  string `json:"event"`
	Holder string `json:"holder"`
	Epoch  int64  `json:"lease_epoch"`
	Expiry string `json:"lease_expiry"`
}

func eventOf(e lease.Event) historyEvent {
	return historyEvent{time.UnixMilli(e.AtUnixMs).UTC().Format("2006-01-02T15:04:05.000Z"), e.Kind, e.Holder, e.Epoch,
		time.UnixMilli(e.ExpiryUnixMs).UTC().Format("2006-01-02T15:04:05.000Z")}
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
		if last.Kind == "claim" {
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (o *opts) health(ctx context.Context) error {
	var urls []string
	vals, perRegion := forRegion(o.generators, o.region)
	if perRegion {
		if len(vals) == 0 {
			return usageError{fmt.Sprintf("health: --generators names no generator in region %s", o.region)}
		}
		urls = vals
	} else if o.generators != "" {
		urls = strings.Split(o.generators, ",")
	} else if u, ok := localGenerators[o.region]; ok {
		urls = []string{u}
	} else {
		return usageError{"health: --generators URL,URL is needed outside the local stack"}
	}
	hc, err := o.httpClient()
	if err != nil {
		return err
	}
	type row struct {
		URL    string         `json:"url"`
		Status int            `json:"http_status"`
		Health map[string]any `json:"healthz"`
		Error  string         `json:"error,omitempty"`
		// LeaseLost: the lease table no longer holds what the generator reports (quarantined,
		// lifted, fenced or claimed by another): it stops at its next renewal, or at its fence.
		LeaseLost string `json:"lease_lost,omitempty"`
	}
	var rows []row
	unhealthy := 0
	tables := map[string]lease.Store{}
	for _, u := range urls {
		r := row{URL: u}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(u, "/")+"/healthz", nil)
		resp, err := hc.Do(req)
		if err != nil {
			r.Error = err.Error()
		} else {
			r.Status = resp.StatusCode
			_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&r.Health)
			resp.Body.Close()
		}
		// A list of generators of several regions: with --region, only that region's (each
		// /healthz names its region; an unreachable one is kept, it cannot say).
		if name, _ := r.Health["region"].(string); o.regionSet && !perRegion && name != "" && name != o.region {
			continue
		}
		if r.Status == http.StatusOK {
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
			status, _ := r.Health["status"].(string)
			reason, _ := r.Health["reason"].(string)
			machine, fence := "-", "-"
			if ls, ok := r.Health["leases"].([]any); ok {
				var ms, fs []string
				for _, l := range ls {
					lm, _ := l.(map[string]any)
					if held, _ := lm["held"].(bool); held {
						ms = append(ms, fmt.Sprintf("%v:%v", lm["layout"], lm["machine"]))
						fs = append(fs, fmt.Sprintf("%.0fs", toF(lm["fence_in_ms"])/1000))
					}
				}
				if len(ms) > 0 {
					machine, fence = strings.Join(ms, ","), strings.Join(fs, ",")
				}
			}
			clock := "-"
			if c, ok := r.Health["clock"].(map[string]any); ok {
				clock = fmt.Sprintf("healthy=%v check=%v", c["healthy"], c["check"])
				if p, _ := c["problem"].(string); p != "" {
					clock += " problem=" + p
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
func (o *opts) leaseLost(ctx context.Context, tables map[string]lease.Store, h map[string]any) string {
	ls, _ := h["leases"].([]any)
	for _, l := range ls {
		lm, _ := l.(map[string]any)
		if held, _ := lm["held"].(bool); !held {
			continue
		}
		layout, _ := lm["layout"].(string)
		st, ok := tables[layout]
		if !ok {
			var err error
			if st, err = o.openLeaseTable(ctx, layout); err != nil {
				fmt.Fprintf(o.stderr, "idgenctl: health: lease table of %s not read (%v): generators' own view only\n", layout, err)
				st = nil
			}
			tables[layout] = st
		}
		if st == nil {
			continue
		}
		m, epoch := int(toF(lm["machine"])), int64(toF(lm["epoch"]))
		row, err := st.Get(ctx, m)
		switch {
		case errors.Is(err, lease.ErrNotFound):
			return fmt.Sprintf("%s:%d has no row in the lease table", layout, m)
		case err != nil:
			fmt.Fprintf(o.stderr, "idgenctl: health: lease %s:%d not read: %v\n", layout, m, err)
		case row.Epoch != epoch:
			return fmt.Sprintf("%s:%d epoch %d, the table has epoch %d (%s)", layout, m, epoch, row.Epoch, row.Holder)
		}
	}
	return ""
}

func (o *opts) callersCheck(path string) error {
	c, err := auth.LoadCallers(path)
	if err != nil {
		return err
	}
	return o.emit(c, func(w io.Writer) {
		fmt.Fprintf(w, "%s: trust domain %s, %d callers\n", path, c.TrustDomain, len(c.Callers))
		fmt.Fprintln(w, "CALLER\tIDENTITY\tIDS/S\tBURST\tADMIN")
		for _, cl := range c.Callers {
			q := "unlimited"
			if cl.IDsPerSecond > 0 {
				q = strconv.FormatFloat(cl.IDsPerSecond, 'f', -1, 64)
			}
			fmt.Fprintf(w, "%s\tspiffe://%s/svc/%s\t%s\t%d\t%v\n", cl.Name, c.TrustDomain, cl.Name, q, cl.Burst, cl.Admin)
		}
	})
}

func toF(v any) float64 {
	f, _ := v.(float64)
	return f
}

func (o *opts) infra(ctx context.Context, cmd string, w []string) error {
	if cmd == "check-plan" {
		if err := need(w, 2, "infra check-plan PLAN.json"); err != nil {
			return err
		}
		return infra.CheckPlanFile(w[1], o.stdout)
	}
	if err := need(w, 1, "infra "+cmd); err != nil {
		return err
	}
	if cmd == "apply" && o.planFile == "" {
		return usageError{"infra apply: --plan FILE (from infra plan): apply runs only a saved, guarded plan"}
	}
	dir := o.infraDir
	if dir == "" {
		var err error
		if dir, err = infra.FindDir("."); err != nil {
			return err
		}
	} else if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	bin := o.terraform
	if bin == "" {
		var err error
		if bin, err = infra.FindTerraform(dir); err != nil {
			return err
		}
	}
	r := &infra.Runner{Dir: dir, Terraform: bin, Stdout: o.stdout, Stderr: o.stderr}
	switch cmd {
	case "fmt":
		return r.Fmt(ctx)
	case "validate":
		return r.Validate(ctx, o.tfDir)
	case "plan":
		var targets []string
		switch {
		case o.regionSet && o.allRegions:
			return usageError{"infra plan: --region or --all, not both"}
		case o.regionSet:
			var err error
			if targets, err = r.Targets([]string{o.region}); err != nil {
				return err
			}
		case !o.allRegions && o.tfDir == "live":
			return usageError{"infra plan: say which: --region R or --all"}
		}
		plan := o.planFile
		if plan == "" {
			plan = filepath.Join(dir, o.tfDir, "idgen.tfplan")
		}
		return r.Plan(ctx, o.tfDir, plan, targets, nil)
	case "apply":
		return r.Apply(ctx, o.tfDir, o.planFile, o.override)
	}
	return usageError{"unknown infra command " + cmd}
}
