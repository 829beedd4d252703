package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// about is the root's help text above the command list; the list itself, and every command's
// help, are cobra's, from the commands' Use and Short.
const about = `idgenctl: the idgen operators' tool

Changes (regions retire, leases quarantine, lift, fence-restore, set-rules) print what they will
change and ask for confirmation on a terminal; --yes runs them without asking, and without a
terminal they need --yes. Exit codes: 0 done, 1 failed, 2 bad usage (dupcheck and routes check:
1 when they found something).

Every flag also reads IDGEN_<FLAG> from the environment (a flag on the command line wins), except
--yes and the plan guard's override. --lease-store and --generators also take REGION=VALUE pairs
(us-east-1=dynamodb:URL,eu-west-1=dynamodb:URL): the ones for --region are used.`

// commandGroups are the sections of the root's command list, in order; the commands' GroupIDs
// name them.
var commandGroups = []*cobra.Group{
	{ID: "ids", Title: "IDs:"},
	{ID: "registry", Title: "The registry:"},
	{ID: "fleet", Title: "A region's leases and generators:"},
	{ID: "files", Title: "Configuration files:"},
	{ID: "publicids", Title: "The public-ID mapping store:"},
	{ID: "infra", Title: "Infrastructure:"},
	{ID: "other", Title: "Other:"},
}

// setHelp groups the root's commands and gives the root a usage that lists every command down to
// the one that runs (idgenctl leases quarantine N), with its Short; the other commands keep
// cobra's usage.
func setHelp(root *cobra.Command, groups map[string][]*cobra.Command) {
	root.Long = about
	root.AddGroup(commandGroups...)
	for id, cs := range groups {
		for _, c := range cs {
			c.GroupID = id
		}
	}
	root.SetHelpCommandGroupID("other")
	root.SetCompletionCommandGroupID("other")
	def := root.UsageFunc()
	root.SetUsageFunc(func(c *cobra.Command) error {
		if c != root {
			return def(c)
		}
		return rootUsage(c.OutOrStderr(), root, groups)
	})
}

// rootUsage writes the root's usage: each group's commands by their full use lines, in the order
// of groups (cobra's own, help and completion, are in no group of it: they come under Other), then
// the common flags.
func rootUsage(w io.Writer, root *cobra.Command, groups map[string][]*cobra.Command) error {
	fmt.Fprintf(w, "Usage:\n  %s COMMAND [flags]\n", root.Name())
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, g := range root.Groups() {
		fmt.Fprintf(tw, "\n%s\n", g.Title)
		cs := groups[g.ID]
		if cs == nil {
			for _, c := range root.Commands() {
				if c.GroupID == g.ID && (c.IsAvailableCommand() || c.Name() == "help") {
					cs = append(cs, c)
				}
			}
		}
		for _, c := range cs {
			for _, leaf := range leaves(c, g.ID != "other") {
				fmt.Fprintf(tw, "  %s%s\t%s\n", leaf.CommandPath(), strings.TrimPrefix(leaf.Use, leaf.Name()), leaf.Short)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nCommon flags:\n%s\n", strings.TrimRight(root.LocalFlags().FlagUsages(), " \n"))
	_, err := fmt.Fprintf(w, "\nUse \"%s COMMAND --help\" for a command's own flags and more about it.\n", root.Name())
	return err
}

// leaves is c, or with down, the commands under c that run.
func leaves(c *cobra.Command, down bool) []*cobra.Command {
	if !down || !c.HasAvailableSubCommands() {
		return []*cobra.Command{c}
	}
	var out []*cobra.Command
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			out = append(out, leaves(sub, true)...)
		}
	}
	return out
}
