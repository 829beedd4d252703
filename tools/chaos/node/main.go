// Command node is the embedded node the chaos runner starts, freezes, kills and restarts: an
// application using idcore/embedded that issues IDs in batches and prints what it issued.
//
// Output (stdout), one line each: "holder NAME" at start; "ids FENCE LO+N LO+N …" for every batch
// (the IDs LO, LO+1, … LO+N-1 in each run, in the order issued; FENCE is the Unix ms fence of the
// number the batch's IDs carry, read after the batch, 0 when it is no longer held); "refused
// REASON" whenever the refusal reason changes. Built with the chaos tag it takes
// --chaos-clock-file (chaosclock.go).
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
	"github.com/idgen/idgen/libs/idcore/embedded"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/idcore/lease/leasestore"
)

func main() {
	store := flag.String("store", "", "sqlite:PATH or dynamodb:ENDPOINT_URL")
	rng := flag.String("range", "64-64", "machine numbers")
	leaseD := flag.Duration("lease", 3*time.Second, "lease")
	renew := flag.Duration("renew", 500*time.Millisecond, "renew interval")
	margin := flag.Duration("margin", 500*time.Millisecond, "fence margin")
	batch := flag.Int("batch", 1000, "IDs per batch")
	pause := flag.Duration("pause", 5*time.Millisecond, "pause after each batch")
	clockOpt := clockFlags()
	flag.Parse()

	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	kind, where, _ := strings.Cut(*store, ":")
	st, err := leasestore.Open(ctx, kind, where, lease.TableV2)
	if err != nil {
		fail(err)
	}
	clock, health := clockOpt(ctx)
	holder := lease.HolderName(time.Now())
	node, err := embedded.Start(ctx, embedded.Config{
		Stores: map[string]lease.Store{"v2": st}, Range: *rng, Holder: holder,
		Lease: *leaseD, Renew: *renew, FenceMargin: *margin,
		Clock: clock, Health: health, ClockEvery: 100 * time.Millisecond, Logger: log,
	})
	if err != nil {
		fail(err)
	}
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	fmt.Fprintf(out, "holder %s\n", holder)
	out.Flush()
	issue(ctx, node, out, *batch, *pause)
	if err := node.Close(context.Background()); err != nil {
		log.Warn("close", "error", err)
	}
}

func issue(ctx context.Context, node *embedded.Node, out *bufio.Writer, batch int, pause time.Duration) {
	lastReason := ""
	buf := make([]idcore.ID, 0, batch)
	line := make([]byte, 0, 256)
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
		var fence int64
		if m, f, ok := node.Generator().Held("v2"); ok && m == machineOf(buf[0]) {
			fence = f
		}
		line = append(line[:0], "ids "...)
		line = strconv.AppendInt(line, fence, 10)
		for i := 0; i < len(buf); {
			j := i + 1
			for j < len(buf) && buf[j] == buf[j-1]+1 {
				j++
			}
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(buf[i]), 10)
			line = append(line, '+')
			line = strconv.AppendInt(line, int64(j-i), 10)
			i = j
		}
		line = append(line, '\n')
		out.Write(line)
		out.Flush()
		if pause > 0 {
			time.Sleep(pause)
		}
	}
}

// machineOf is the v2 machine field of id.
func machineOf(id idcore.ID) int { return int(id>>10) & 511 }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "node:", err)
	os.Exit(2)
}
