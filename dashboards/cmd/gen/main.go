// Command gen writes idgen's Prometheus alert rules, their promtool unit tests and the Grafana
// dashboards into the dashboards module, from deploy/alert-thresholds.json and the code in package
// dashboards. Run it from the repository root: go run ./dashboards/cmd/gen
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/idgen/idgen/dashboards"
)

func main() {
	out := flag.String("out", "dashboards", "folder to write into (the dashboards module)")
	thresholds := flag.String("thresholds", dashboards.ThresholdsFile, "the thresholds document")
	base := flag.String("runbook-base", "", "prefix of each runbook_url (e.g. https://git.example/idgen/blob/main/); empty: the thresholds document's runbook_base")
	flag.Parse()
	if err := dashboards.Generate(*out, *thresholds, dashboards.Options{RunbookBase: *base}); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
