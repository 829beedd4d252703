// Command idnode is the embedded node that the embedded package's fault tests and the chaos
// runner (tools/chaos) start, freeze, kill and restart: an application on libs/idcore/embedded
// that issues IDs in batches and prints what it issued on stdout, in the protocol of package
// nodeout (holder, ids FENCE LO+N …, refused REASON, released).
//
// Built with the chaos tag it takes --chaos-clock-file (clock_chaos.go): the runner moves the
// process's clock, and the error its clock discipline reports, through that file. A build without
// the tag has no such flag.
//
//	go build -o idnode ./libs/idcore/embedded/idnode
//	idnode --store sqlite:/tmp/leases.db --range 64-65 --batch 20
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/idcore/embedded"
	"github.com/idgen/idgen/libs/idcore/embedded/nodeout"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/leasestore"
)

// offsetClock is a clock moved by a fixed offset: a test-only way to give one process a skewed
// clock.
type offsetClock struct {
	idcore.Clock
	off time.Duration
}

func (c offsetClock) Now() time.Time { return c.Clock.Now().Add(c.off) }

func main() {
	store := flag.String("store", "", "sqlite:PATH or dynamodb:ENDPOINT_URL")
	table := flag.String("table", lease.TableV2, "lease table")
	rng := flag.String("range", "64-64", "machine numbers")
	regionNum := flag.Int("region", 0, "the region number written into the IDs (the region of the lease table)")
	leaseD := flag.Duration("lease", 3*time.Second, "lease")
	renew := flag.Duration("renew", 500*time.Millisecond, "renew interval")
	margin := flag.Duration("margin", 500*time.Millisecond, "fence margin")
	batch := flag.Int("batch", 1000, "IDs per batch")
	pause := flag.Duration("pause", 2*time.Millisecond, "pause after each batch")
	cycle := flag.Duration("cycle", 0, "when set, close the node (releasing the number) and start a new one this often")
	cyclePause := flag.Duration("cycle-pause", 0, "with --cycle, wait this long after a release before the next node")
	offset := flag.Duration("test-clock-offset", 0, "test only: skew this process's wall clock")
	clockOpt := clockFlags()
	flag.Parse()

	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	kind, where, _ := strings.Cut(*store, ":")
	st, err := leasestore.Open(ctx, kind, where, *table)
	if err != nil {
		fail(err)
	}
	clock, health := clockOpt(ctx)
	if *offset != 0 {
		if clock == nil {
			clock = idcore.SystemClock()
		}
		clock = offsetClock{clock, *offset}
	}
	out := nodeout.NewWriter(os.Stdout)
	for n := 0; ctx.Err() == nil; n++ {
		holder := lease.HolderName(time.Now()) + "/node-" + strconv.Itoa(n)
		node, err := embedded.Start(ctx, embedded.Config{
			Stores: map[string]lease.Store{"v2": st}, Range: *rng, Holder: holder, Region: *regionNum,
			Lease: *leaseD, Renew: *renew, FenceMargin: *margin,
			Clock: clock, Health: health, ClockEvery: 100 * time.Millisecond, Logger: log,
		})
		if err != nil {
			fail(err)
		}
		out.Holder(holder)
		runCtx, cancel := ctx, context.CancelFunc(func() {})
		if *cycle > 0 {
			runCtx, cancel = context.WithTimeout(ctx, *cycle)
		}
		issue(runCtx, node, out, *batch, *pause)
		cancel()
		if err := node.Close(context.Background()); err != nil {
			log.Warn("close", "error", err)
		}
		out.Released()
		if *cycle == 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(*cyclePause):
		}
	}
}

// issue asks node for batches until ctx ends and prints each, with the fence of the number its
// IDs carry, and each change of refusal reason.
func issue(ctx context.Context, node *embedded.Node, out *nodeout.Writer, batch int, pause time.Duration) {
	lastReason := ""
	buf := make([]idcore.ID, 0, batch)
	for ctx.Err() == nil {
		var err error
		buf, err = node.AppendBatch(ctx, buf[:0], batch)
		if err != nil {
			if r := idcore.Reason(err); r != "" && r != lastReason {
				lastReason = r
				out.Refused(r)
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		lastReason = ""
		var fence int64
		if m, f, ok := node.Generator().Held("v2"); ok && m == machineOf(buf[0]) {
			fence = f
		}
		out.Batch(fence, buf)
		if pause > 0 {
			time.Sleep(pause)
		}
	}
}

// machineOf is the v2 machine field of id.
func machineOf(id idcore.ID) int { return int(id>>10) & 511 }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "idnode:", err)
	os.Exit(2)
}
