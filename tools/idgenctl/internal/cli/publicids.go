package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/svc/storespec"
	"github.com/idgen/idgen/services/public-id/mapping/backfill"
	"github.com/idgen/idgen/services/public-id/mapping/dynamomap"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/spf13/cobra"
)

// publicidsOpts are the publicids commands' own flags.
type publicidsOpts struct {
	*opts
	from, to, dynamoTable, state, redisCA string
	pageSize, workers                     int
}

func (o *opts) publicidsCmd() *cobra.Command {
	po := &publicidsOpts{opts: o}
	bf := &cobra.Command{Use: "backfill --from REDIS_STORE --to dynamodb:ENDPOINT_URL", Args: exactArgs(0),
		Short: "copy every public-ID mapping of a Redis store into DynamoDB, verified, resumable (--state)",
		Long: `Copies every mapping of a Redis mapping store (--from: the public-ID programs' --store, redis:HOST:PORT,
a redis:// or rediss:// URL, or redis-cluster:…) into the DynamoDB table of the store of record (--to
dynamodb:ENDPOINT_URL, --dynamodb-table), page by page (SCAN over the public keys; on a cluster every
master's). Each mapping is copied as it is (never over one the table has: the first public ID of an
internal ID stays its, and a public ID the table maps to another internal ID is a failure), then
verified: the table resolves the public ID to the internal ID, and looks the internal ID up as the
public ID the copy kept (another one when the internal ID had a public ID in the table already: a
difference, listed; both resolve).

With --state FILE the Redis cursor and the counts are written to FILE after every page (a new file
renamed over the old), and a run given the same FILE goes on where the last one stopped (the page
under way then is copied again, and counted already present); a FILE of another --from or --to is
refused, one of a finished backfill prints its counts and copies nothing. Without --state a stopped
run starts over (copying again is harmless). Redis is read, not written (but for the repair of a
half-done create on a cluster, as a resolve does it), and its persistence is not checked; its user
needs redismap.ACL, ACLConfigRead before 7.2, and ACLScan. The DynamoDB role needs the table's
dynamodb:DescribeTable, GetItem, PutItem and Scan.

Counts: scanned (pairs read; a mapping may come twice), copied, already present, verified, differing,
failed; scanned = verified + failed. Exit codes: 0 every mapping verified, 1 failures (listed) or an
error (a store unreachable past the retries: run again with the same --state), 2 bad usage.`,
		RunE: func(cmd *cobra.Command, _ []string) error { return po.backfill(cmd.Context()) }}
	f := bf.Flags()
	f.StringVar(&po.from, "from", "", "the Redis mapping store: redis:HOST:PORT, a redis:// or rediss:// URL, redis-cluster:HOST:PORT,… or redis-cluster:URL (required)")
	f.StringVar(&po.to, "to", "", "the DynamoDB store: dynamodb:ENDPOINT_URL, region and credentials from the standard AWS chain (required)")
	f.StringVar(&po.dynamoTable, "dynamodb-table", dynamomap.DefaultTable, "the DynamoDB table")
	f.StringVar(&po.state, "state", "", "the state file: progress saved after every page, and read to go on (default: none)")
	f.StringVar(&po.redisCA, "redis-ca", "", "PEM file of the CA that issued the Redis servers' certificates (rediss://); default: system roots")
	f.IntVar(&po.pageSize, "page-size", 500, "mappings read from Redis per page")
	f.IntVar(&po.workers, "workers", 16, "mappings copied and verified at once")
	return group("publicids", "the public-ID mapping store: backfill", bf)
}

// backfillReport is publicids backfill's JSON output.
type backfillReport struct {
	From        string                `json:"from"`
	To          string                `json:"to"`
	Table       string                `json:"table"`
	StateFile   string                `json:"state_file,omitempty"`
	Done        bool                  `json:"done"`
	Counts      backfill.Counts       `json:"counts"`
	Failures    []backfill.Failure    `json:"failures"`
	Differences []backfill.Difference `json:"differences"`
	Error       string                `json:"error,omitempty"`
}

func (o *publicidsOpts) backfill(ctx context.Context) error {
	if o.from == "" || o.to == "" {
		return usagef("publicids backfill: name the stores: --from REDIS_STORE and --to dynamodb:ENDPOINT_URL")
	}
	from, err := storespec.Parse("--from", o.from, storespec.Redis, storespec.RedisCluster)
	if err != nil {
		return usageError{err.Error()}
	}
	to, err := storespec.Parse("--to", o.to, storespec.DynamoDB)
	if err != nil {
		return usageError{err.Error()}
	}
	if o.dynamoTable == "" {
		return usagef("publicids backfill: --dynamodb-table: want a table name")
	}
	if o.pageSize <= 0 || o.workers <= 0 {
		return usagef("publicids backfill: --page-size %d, --workers %d: want positive numbers", o.pageSize, o.workers)
	}
	rep := backfillReport{From: redact(from), To: redact(to), Table: o.dynamoTable, StateFile: o.state}
	rep.To += " table " + o.dynamoTable
	var st backfill.State
	if o.state != "" {
		fst, ok, err := backfill.LoadFile(o.state)
		if err != nil {
			return usageError{err.Error()}
		}
		if ok && (fst.From != rep.From || fst.To != rep.To) {
			return usagef("publicids backfill: the state file %s is of a backfill from %s to %s, not from %s to %s: give another --state",
				o.state, fst.From, fst.To, rep.From, rep.To)
		}
		st = fst.State
		if fi, err := os.Stat(filepath.Dir(o.state)); err != nil || !fi.IsDir() {
			return usagef("publicids backfill: --state %s: its directory does not exist", o.state)
		}
	}
	if !st.Done {
		src, err := redismap.Open(ctx, redismap.Target{Addr: from.Where, Cluster: from.Kind == storespec.RedisCluster, CAFile: o.redisCA},
			redismap.Options{AcceptVolatile: true, CheckEvery: -1})
		if err != nil {
			return fmt.Errorf("publicids backfill: --from: %w", err)
		}
		defer src.Close()
		dst, err := dynamomap.Open(ctx, dynamomap.Target{Endpoint: to.Where, Table: o.dynamoTable}, dynamomap.Options{})
		if err != nil {
			return fmt.Errorf("publicids backfill: --to: %w", err)
		}
		defer dst.Close()
		last := time.Now()
		save := func(s backfill.State) error {
			if time.Since(last) >= 10*time.Second {
				last = time.Now()
				c := s.Counts
				fmt.Fprintf(o.stderr, "publicids backfill: %d pages, %d scanned, %d copied, %d already present, %d verified, %d differing, %d failed\n",
					c.Pages, c.Scanned, c.Copied, c.AlreadyPresent, c.Verified, c.Differing, c.Failed)
			}
			if o.state == "" {
				return nil
			}
			return backfill.SaveFile(o.state, backfill.FileState{From: rep.From, To: rep.To, State: s})
		}
		st, err = backfill.Run(ctx, src, dst, st, backfill.Options{PageSize: o.pageSize, Workers: o.workers, Save: save})
		if err != nil {
			rep.Error = err.Error()
		}
	}
	rep.Done, rep.Counts = st.Done, st.Counts
	rep.Failures, rep.Differences = append([]backfill.Failure{}, st.Failures...), append([]backfill.Difference{}, st.Differences...)
	if err := o.emit(rep, func(w io.Writer) { backfillText(w, rep) }); err != nil {
		return err
	}
	switch {
	case rep.Error != "":
		hint := ""
		if o.state != "" {
			hint = fmt.Sprintf("; run again with --state %s to go on from the last page saved", o.state)
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			return exitError{code: 1, msg: "publicids backfill: stopped" + hint}
		}
		return exitError{code: 1, msg: "publicids backfill: " + rep.Error + hint}
	case rep.Counts.Failed > 0:
		return exitError{code: 1, msg: fmt.Sprintf("publicids backfill: %d mappings failed", rep.Counts.Failed)}
	}
	return nil
}

func backfillText(w io.Writer, r backfillReport) {
	c := r.Counts
	what := "done"
	if !r.Done {
		what = "not done"
	}
	fmt.Fprintf(w, "backfill from %s to %s: %s\n", r.From, r.To, what)
	fmt.Fprintf(w, "pages\t%d\n", c.Pages)
	fmt.Fprintf(w, "scanned\t%d\n", c.Scanned)
	fmt.Fprintf(w, "copied\t%d\n", c.Copied)
	fmt.Fprintf(w, "already present\t%d\n", c.AlreadyPresent)
	fmt.Fprintf(w, "verified\t%d\n", c.Verified)
	fmt.Fprintf(w, "differing\t%d\n", c.Differing)
	fmt.Fprintf(w, "failed\t%d\n", c.Failed)
	for _, d := range r.Differences {
		fmt.Fprintf(w, "differing: %s → %d, which keeps %s in DynamoDB (both resolve)\n", d.Public, d.Internal, d.Target)
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "failed: %s → %d: %s\n", f.Public, f.Internal, f.Error)
	}
	if n := c.Differing - int64(len(r.Differences)); n > 0 {
		fmt.Fprintf(w, "(%d more differing not listed)\n", n)
	}
	if n := c.Failed - int64(len(r.Failures)); n > 0 {
		fmt.Fprintf(w, "(%d more failed not listed)\n", n)
	}
}

// redact names a store without the password a URL may hold.
func redact(s storespec.Spec) string {
	where := s.Where
	if !strings.Contains(where, "://") {
		return string(s.Kind) + ":" + where
	}
	if u, err := url.Parse(where); err == nil {
		u.User = nil
		where = u.String()
	} else {
		where = "(a URL that does not parse)"
	}
	if s.Kind == storespec.Redis {
		return where // redis://… or rediss://…
	}
	return string(s.Kind) + ":" + where
}
