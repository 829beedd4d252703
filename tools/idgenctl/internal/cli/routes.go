package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/idgen/idgen/libs/routes/routecheck"
	"github.com/spf13/cobra"
)

func (o *opts) routesCmd() *cobra.Command {
	check := &cobra.Command{Use: "check FILE", Short: "lint a gateway routes file: types that leave an upstream room to pass an internal ID", Args: exactArgs(1),
		Long: `Lint a gateway routes file (the public-ID service's --routes): unbounded ints and numbers,
free-form strings, millisecond times in a response with int fields, and objects whose ints,
numbers, times, enums and bools can carry 41 bits or more together (room for an ID's time).

First the room of each object of each route's response, one line each, in whole bits:
ROUTE OBJECT: N bits (FIELD BITS, ARRAY MAX_ITEMS × ITEM_BITS, …); M in its numbers, times, enums
and bools. Then each finding, one line: ROUTE FIELD: problem; declare what to declare instead.

Exit codes: 0 no findings, 1 findings, 2 the file is unreadable or the gateway would refuse it
(the message is the gateway's own).`,
		RunE: func(_ *cobra.Command, args []string) error { return o.routesCheck(args[0]) }}
	return group("routes", "the gateway's routes file", check)
}

// routesReport is routes check's JSON output.
type routesReport struct {
	File     string               `json:"file"`
	Room     []routecheck.Room    `json:"room"`
	Findings []routecheck.Finding `json:"findings"`
}

func (o *opts) routesCheck(path string) error {
	res, err := routecheck.LintFile(path, time.Now())
	if err != nil {
		return exitError{code: 2, msg: "routes check: " + err.Error()}
	}
	findings := res.Findings
	if err := o.emit(routesReport{File: path, Room: res.Room, Findings: findings}, func(w io.Writer) {
		for _, r := range res.Room {
			fmt.Fprintln(w, r.String())
		}
		for _, f := range findings {
			fmt.Fprintln(w, f.String())
		}
		if len(findings) == 0 {
			fmt.Fprintf(w, "%s: no findings\n", path)
		}
	}); err != nil {
		return err
	}
	if len(findings) > 0 {
		return exitError{code: 1, msg: fmt.Sprintf("routes check: %d findings in %s", len(findings), path)}
	}
	return nil
}
