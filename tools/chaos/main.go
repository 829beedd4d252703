// Command chaos runs real generator and embedded-node processes on shared, small ranges of
// machine numbers, on a dynalite lease store and on a SQLite lease file, asks each for IDs without
// pause, and injects faults on a random schedule drawn from a seed: SIGSTOP shorter and longer
// than the lease, kill -9 and restart, the store frozen shorter than the outage bound (lease −
// margin − renew − retry cadence) and longer than lease minus margin, the store killed -9 and
// restarted, quarantine and lift and the restore fence through idgenctl (which reads the lease and
// margin from the table's rules), a restore from an old backup (the first taken before the first
// claim) followed by the restore fence, a process whose lease differs from the table's rules (it
// must refuse to start), and clock offsets within the bound, beyond it (seen by the clock
// discipline) and stepped beyond it unseen. It checks every ID: none returned twice, each
// process's strictly increasing, none at or past the fence its node reported, none from a clock
// beyond the bound that the discipline reported; prints a table by fault, and exits 1 on the
// first duplicate, naming both processes and the ID.
//
//	go run ./tools/chaos --duration 5m [--seed N] [--results FILE]
//	go run ./tools/chaos --readme-block FILE     the README's block from a results file; runs nothing
//
// The faults are one file per family (fault_process.go, fault_store.go, fault_operator.go,
// fault_clock.go), each kind a Fault (fault.go); the runner (runner.go) sets the run up, injects
// the schedule and checks what the processes returned (check.go).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/idgen/idgen/libs/idcore/lease"
)

// The processes' lease settings, and the clock bound of the clock discipline (the largest
// estimated error and forward jump a generator accepts).
const (
	leaseLen   = 3 * time.Second
	renew      = 500 * time.Millisecond
	margin     = 500 * time.Millisecond
	clockBound = 5 * time.Millisecond
	// outageBound: a store outage shorter than this is invisible wherever it starts
	// (docs/leases.md#store-outages): lease − margin − renew − min(renew, lease.RetryCadence).
	outageBound = leaseLen - margin - renew - min(renew, lease.RetryCadence)
)

// config is one run's settings, from the command line.
type config struct {
	duration time.Duration
	// seed draws the fault schedule; the same seed gives the same schedule.
	seed uint64
	// generators and nodes per group, sharing generators-1 and nodes-1 machine numbers.
	generators, nodes int
	// batch is the IDs per generator request (at most 1,000) or node batch.
	batch int
	// generatorPause and nodePause: the pause after each generator answer and node batch.
	generatorPause, nodePause time.Duration
	// keep keeps the work folder even when the run passes.
	keep bool
	// results, when set, is where the run's results are written as JSON (results.go).
	results string
}

func main() {
	var c config
	flag.DurationVar(&c.duration, "duration", 5*time.Minute, "how long to run")
	flag.Uint64Var(&c.seed, "seed", 0, "fault schedule seed (0: from the clock); the same seed replays the same schedule")
	flag.IntVar(&c.generators, "generators", 4, "generators per group (sharing generators-1 machine numbers)")
	flag.IntVar(&c.nodes, "nodes", 3, "embedded nodes per group (sharing nodes-1 machine numbers)")
	flag.IntVar(&c.batch, "batch", 1000, "IDs per request or node batch (the generator's largest batch is 1000)")
	flag.DurationVar(&c.generatorPause, "generator-pause", 2*time.Millisecond, "pause after each generator answer")
	flag.DurationVar(&c.nodePause, "node-pause", 5*time.Millisecond, "pause after each node batch")
	flag.BoolVar(&c.keep, "keep", false, "keep the work folder (logs, stores) even when the run passes")
	flag.StringVar(&c.results, "results", "", "write the run's results (the table's rows and the totals) as JSON to this file")
	block := flag.String("readme-block", "", "print the README's block (the totals and the table by fault) from this results file, and run nothing")
	flag.Parse()
	if *block != "" {
		res, err := readResults(*block)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			os.Exit(2)
		}
		res.readmeBlock(os.Stdout)
		return
	}
	if c.seed == 0 {
		c.seed = uint64(time.Now().UnixNano())
	}
	c.generators, c.nodes, c.batch = max(c.generators, 2), max(c.nodes, 2), max(c.batch, 1)
	code, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// run runs the chaos run c describes and returns its exit status: 0 when clean, 1 when a check
// failed; an error when the run could not be set up or a fault could not be injected.
func run(c config) (code int, err error) {
	fmt.Printf("chaos: seed %d (replay: go run ./tools/chaos --seed %d --duration %s)\n", c.seed, c.seed, c.duration)
	r, err := newRunner(c)
	if err != nil {
		return 0, err
	}
	defer func() { r.close(code == 0 && err == nil) }()
	if err := r.setUp(); err != nil {
		return 0, err
	}
	if err := r.start(); err != nil {
		return 0, err
	}
	if err := r.inject(); err != nil {
		return 0, err
	}
	r.stop()
	return r.report(), nil
}
