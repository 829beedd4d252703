// Command gameday runs a five-region game day on this machine (make gameday): see package
// tools/gameday. It prints the seed, a table per phase and where the picture is, and exits 1 when
// a check failed, 3 when every failure was in a phase where this machine stalled (inconclusive),
// and 2 when the run could not be made.
//
//	gameday [--scenario tools/gameday/scenarios/default.json] [--seed N] [--out DIR]
//	        [--topology-vars FILE.tfvars.json] [--prometheus]
//	gameday --plan [--scenario F] [--seed N]     the phases with their regions drawn, for a staging drill
//	gameday --readme-block DIR                   the README's block from the run folder DIR's results.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/idgen/idgen/libs/topology"
	"github.com/idgen/idgen/tools/gameday"
)

func main() {
	os.Exit(run())
}

func run() int {
	scenario := flag.String("scenario", "tools/gameday/scenarios/default.json", "the scenario file")
	seed := flag.Uint64("seed", 0, "draws the scenario's random regions (0: a new seed, printed)")
	out := flag.String("out", "", "results folder (default .idgen/gameday/<start time>)")
	vars := flag.String("topology-vars", "", "the topology module's variables (a .tfvars.json file; default: its defaults)")
	prom := flag.Bool("prometheus", true, "run Prometheus with idgen's alert rules and check IdgenClientOnPeerRegion fires for each lost region's caller")
	planOnly := flag.Bool("plan", false, "print the phases with their regions drawn from the seed, and run nothing")
	block := flag.String("readme-block", "", "print the README's block from this run folder's results.json (tools/gameday/last-run: the recorded run), and run nothing")
	flag.Parse()

	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gameday:", err)
		return 2
	}
	if *block != "" {
		saved, err := gameday.ReadResults(abs(root, *block))
		if err != nil {
			fmt.Fprintln(os.Stderr, "gameday:", err)
			return 2
		}
		fmt.Print(gameday.ReadmeBlock(saved))
		return 0
	}
	sc, err := gameday.LoadScenario(abs(root, *scenario))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if *seed == 0 {
		*seed = rand.Uint64() >> 1
	}
	var tv map[string]any
	if *vars != "" {
		b, err := os.ReadFile(abs(root, *vars))
		if err == nil {
			err = json.Unmarshal(b, &tv)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "gameday: --topology-vars:", err)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *planOnly {
		tp, err := topology.Plan(ctx, topology.Options{Module: filepath.Join(root, "infra", "terraform", "modules", "topology"), Vars: tv})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		phases, err := sc.Resolve(*seed, tp.RegionNames())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Print(gameday.PlanText(sc, *seed, phases, tp))
		return 0
	}
	if *out == "" {
		*out = filepath.Join(root, ".idgen", "gameday", time.Now().UTC().Format("20060102T150405Z"))
	}
	fmt.Printf("gameday: seed %d (replay: --seed %d), results in %s\n", *seed, *seed, *out)
	res, err := gameday.Run(ctx, gameday.Options{Scenario: sc, Seed: *seed, Root: root, Out: abs(root, *out),
		TopologyVars: tv, Prometheus: *prom, Log: os.Stdout})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Print("\n" + res.Summary + "\n" + res.Table)
	fmt.Printf("\ngameday: picture %s, table %s, the README's block: go run ./tools/gameday/cmd/gameday --readme-block %s\n",
		filepath.Join(*out, "timeline.svg"), filepath.Join(*out, "table.txt"), *out)
	switch {
	case res.Inconclusive:
		return 3
	case len(res.Failures) > 0:
		return 1
	}
	return 0
}

func abs(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	if _, err := os.Stat(p); err == nil {
		a, _ := filepath.Abs(p)
		return a
	}
	return filepath.Join(root, p)
}

// repoRoot is the nearest folder above the working one with go.work and package-lock.json.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no repository root above the working folder")
		}
		dir = parent
	}
}
