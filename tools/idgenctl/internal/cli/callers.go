package cli

import (
	"fmt"
	"io"
	"strconv"

	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/spf13/cobra"
)

func (o *opts) callersCmd() *cobra.Command {
	check := &cobra.Command{Use: "check FILE", Short: "validate a callers file (identities, quotas) before a rollout", Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error { return o.callersCheck(args[0]) }}
	return group("callers", "the services' callers file", check)
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
