package cli

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// yesFlag adds --yes, into yes, to a command that changes something.
func yesFlag(c *cobra.Command, yes *bool) *cobra.Command {
	c.Flags().BoolVarP(yes, "yes", "y", false, "make the change without asking (needed without a terminal)")
	return c
}

// confirm prints what a change will do, on stderr (stdout keeps the command's own output), then
// asks on a terminal (y/N). --yes skips the question; without a terminal and without --yes the
// change is refused (exit 2).
func (o *opts) confirm(yes bool, what string, plan []string) error {
	fmt.Fprintf(o.stderr, "%s will:\n", what)
	for _, l := range plan {
		fmt.Fprintf(o.stderr, "  %s\n", l)
	}
	if yes {
		return nil
	}
	if !o.terminal {
		return exitError{code: 2, msg: fmt.Sprintf("%s: not run: standard input is not a terminal to confirm on; pass --yes to make this change", what)}
	}
	fmt.Fprint(o.stderr, "Proceed? [y/N] ")
	line, _ := bufio.NewReader(o.in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return exitError{code: 1, msg: fmt.Sprintf("%s: not confirmed: nothing was changed", what)}
}
