// Command idproc is the process the embedded package's fault tests start, freeze, kill and
// restart: an embedded node that issues IDs in small batches and prints every ID it issued.
//
// Output (stdout), one line each: "holder NAME" at every start of a node, "ids ID ID …" for every
// batch issued, "refused REASON" whenever the refusal reason changes, "released" after Close.
package main

import (
	"bufio"
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
	"github.com/idgen/idgen/libs/idcore/clocktest"
	"github.com/idgen/idgen/libs/idcore/embedded"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/leasestore"
)

// offsetClock is the system clock moved by a fixed offset: a test-only way to give one process a
// skewed clock.
type offsetClock struct {
	idcore.Clock
	off time.Duration
}

func (c offsetClock) Now() time.Time { return c.Clock.Now().Add(c.off) }

func main() {
	store := flag.String("store", "", "sqlite:PATH or dynamodb:ENDPOINT_URL")
	table := flag.String("table", lease.TableV2, "lease table")
	rng := flag.String("range", "64-64", "machine numbers")
	leaseD := flag.Duration("lease", 3*time.Second, "lease")
	renew := flag.Duration("renew", 500*time.Millisecond, "renew interval")
	margin := flag.Duration("margin", 500*time.Millisecond, "fence margin")
	offset := flag.Duration("test-clock-offset", 0, "test only: skew this process's wall clock")
	cycle := flag.Duration("cycle", 0, "when set, close the node (releasing the number) and start a new one this often")
	pause := flag.Duration("pause", 0, "with --cycle, wait this long after a release before the next node")
	batch := flag.Int("batch", 20, "IDs per batch")
	flag.Parse()

	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	kind, where, _ := strings.Cut(*store, ":")
	st, err := leasestore.Open(ctx, kind, where, *table)
	if err != nil {
		fail(err)
	}
	out := bufio.NewWriter(os.Stdout)
	clock := idcore.Clock(offsetClock{idcore.SystemClock(), *offset})
	for n := 0; ctx.Err() == nil; n++ {
		holder := lease.HolderName(time.Now()) + "/node-" + strconv.Itoa(n)
		node, err := embedded.Start(ctx, embedded.Config{
			Stores: map[string]lease.Store{"v2": st}, Range: *rng, Holder: holder,
			Lease: *leaseD, Renew: *renew, FenceMargin: *margin,
			Clock: clock, Health: clocktest.Synced(), ClockEvery: 100 * time.Millisecond, Logger: log,
		})
		if err != nil {
			fail(err)
		}
		fmt.Fprintf(out, "holder %s\n", holder)
		out.Flush()
		runCtx := ctx
		var cancel context.CancelFunc = func() {}
		if *cycle > 0 {
			runCtx, cancel = context.WithTimeout(ctx, *cycle)
		}
		issue(runCtx, node, out, *batch)
		cancel()
		if err := node.Close(context.Background()); err != nil {
			log.Warn("close", "error", err)
		}
		fmt.Fprintln(out, "released")
		out.Flush()
		select {
		case <-ctx.Done():
		case <-time.After(*pause):
		}
	}
}

func issue(ctx context.Context, node *embedded.Node, out *bufio.Writer, batch int) {
	lastReason := ""
	buf := make([]idcore.ID, 0, batch)
	line := make([]byte, 0, 64*batch)
	for ctx.Err() == nil {
		var err error
		buf, err = node.AppendBatch(ctx, buf[:0], batch)
		if err != nil {
			if r := idcore.Reason(err); r != "" && r != lastReason {
				lastReason = r
				fmt.Fprintf(out, "refused %s\n", r)
				out.Flush()
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		lastReason = ""
		line = append(line[:0], "ids"...)
		for _, id := range buf {
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(id), 10)
		}
		line = append(line, '\n')
		out.Write(line)
		out.Flush()
		time.Sleep(2 * time.Millisecond)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "idproc:", err)
	os.Exit(2)
}
