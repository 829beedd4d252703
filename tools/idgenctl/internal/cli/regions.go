package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/idcore/region"
	"github.com/spf13/cobra"
)

// regionsOpts are the regions commands' own flags.
type regionsOpts struct {
	*opts
	peer string // add --peer
	yes  bool   // retire --yes
}

func (o *opts) regionsCmd() *cobra.Command {
	ro := &regionsOpts{opts: o}
	list := &cobra.Command{Use: "list", Short: "every region the registry knows, retired ones too", Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.regionsList(cmd.Context()) }}
	get := &cobra.Command{Use: "get NAME", Short: "one region", Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.regionsGet(cmd.Context(), args[0]) }}
	add := &cobra.Command{Use: "add NAME --peer PEER", Short: "add a region; the registry gives it the next unused number", Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return ro.regionsAdd(cmd.Context(), args[0]) }}
	add.Flags().StringVar(&ro.peer, "peer", "", "the region its callers fail over to")
	retire := yesFlag(&cobra.Command{Use: "retire NAME", Short: "retire a region: its number is never given again (asks first)", Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return ro.regionsRetire(cmd.Context(), args[0]) }}, &ro.yes)
	for _, c := range []*cobra.Command{get, retire} {
		c.ValidArgsFunction = o.completeRegionArg
	}
	add.ValidArgsFunction = cobra.NoFileCompletions
	_ = add.RegisterFlagCompletionFunc("peer", o.completeRegions)
	return group("regions", "the registry's regions: list, get, add, retire", list, get, add, retire)
}

func (o *opts) completeRegionArg(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return o.completeRegions(cmd, args, toComplete)
}

type regionOut struct {
	Name      string  `json:"name"`
	Number    int32   `json:"number"`
	Peer      string  `json:"peer"`
	Status    string  `json:"status"`
	AddedAt   string  `json:"added_at"`
	RetiredAt *string `json:"retired_at"`
}

func regionOf(r *idgenv1.Region) regionOut {
	out := regionOut{Name: r.GetName(), Number: r.GetNumber(), Peer: r.GetPeer(), Status: r.GetStatus(),
		AddedAt: r.GetAddedAt().AsTime().UTC().Format(time.RFC3339)}
	if r.RetiredAt != nil {
		s := r.GetRetiredAt().AsTime().UTC().Format(time.RFC3339)
		out.RetiredAt = &s
	}
	return out
}

func regionTable(w io.Writer, rs []regionOut) {
	fmt.Fprintln(w, "NUMBER\tNAME\tPEER\tSTATUS\tADDED\tRETIRED")
	for _, r := range rs {
		ret := "-"
		if r.RetiredAt != nil {
			ret = *r.RetiredAt
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", r.Number, r.Name, r.Peer, r.Status, r.AddedAt, ret)
	}
}

// listRegions reads every region from the registry.
func (o *opts) listRegions(ctx context.Context) ([]regionOut, error) {
	c, err := o.registryClient()
	if err != nil {
		return nil, err
	}
	resp, err := c.ListRegions(ctx, connect.NewRequest(&idgenv1.ListRegionsRequest{}))
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", o.registry, err)
	}
	rs := []regionOut{}
	for _, r := range resp.Msg.GetRegions() {
		rs = append(rs, regionOf(r))
	}
	return rs, nil
}

func (o *opts) regionsList(ctx context.Context) error {
	rs, err := o.listRegions(ctx)
	if err != nil {
		return err
	}
	return o.emit(map[string]any{"regions": rs}, func(w io.Writer) { regionTable(w, rs) })
}

// regionResult prints one region, or the registry's refusal.
func (o *opts) regionResult(op, name string, r *idgenv1.Region, err error) error {
	if err != nil {
		var ce *connect.Error
		if errors.As(err, &ce) {
			return fmt.Errorf("regions %s %s: %s", op, name, ce.Message())
		}
		return err
	}
	out := regionOf(r)
	return o.emit(out, func(w io.Writer) { regionTable(w, []regionOut{out}) })
}

func (o *opts) regionsGet(ctx context.Context, name string) error {
	c, err := o.registryClient()
	if err != nil {
		return err
	}
	resp, err := c.GetRegion(ctx, connect.NewRequest(&idgenv1.GetRegionRequest{Name: name}))
	if err != nil {
		return o.regionResult("get", name, nil, err)
	}
	return o.regionResult("get", name, resp.Msg.GetRegion(), nil)
}

func (o *regionsOpts) regionsAdd(ctx context.Context, name string) error {
	if o.peer == "" {
		return usageError{"regions add NAME needs --peer PEER"}
	}
	c, err := o.registryClient()
	if err != nil {
		return err
	}
	resp, err := c.AddRegion(ctx, connect.NewRequest(&idgenv1.AddRegionRequest{Name: name, Peer: o.peer}))
	if err != nil {
		return o.regionResult("add", name, nil, err)
	}
	return o.regionResult("add", name, resp.Msg.GetRegion(), nil)
}

// regionsRetire retires a region after confirmation. It refuses while the region is the peer of
// another active region: that region's callers would fail over to a region that issues nothing.
func (o *regionsOpts) regionsRetire(ctx context.Context, name string) error {
	rs, err := o.listRegions(ctx)
	if err != nil {
		return err
	}
	var target *regionOut
	var peerOf []string
	for i, r := range rs {
		if r.Name == name {
			target = &rs[i]
		} else if r.Peer == name && r.Status == region.Active {
			peerOf = append(peerOf, r.Name)
		}
	}
	switch {
	case target == nil:
		return fmt.Errorf("regions retire %s: no such region at the registry %s (idgenctl regions list)", name, o.registry)
	case target.RetiredAt != nil || target.Status != region.Active:
		return fmt.Errorf("regions retire %s: already retired (%s)", name, target.Status)
	case len(peerOf) > 0:
		return fmt.Errorf("regions retire %s: it is the peer of active region %s, whose callers fail over to it: give %s another peer first",
			name, strings.Join(peerOf, ", "), strings.Join(peerOf, ", "))
	}
	err = o.confirm(o.yes, "regions retire "+name, []string{
		fmt.Sprintf("retire region %s (number %d, peer %s, added %s) at the registry %s", name, target.Number, target.Peer, target.AddedAt, o.registry),
		fmt.Sprintf("number %d is never given to another region; IDs made in %s still decode with its name", target.Number, name),
		"this cannot be undone",
	})
	if err != nil {
		return err
	}
	c, err := o.registryClient()
	if err != nil {
		return err
	}
	resp, err := c.RetireRegion(ctx, connect.NewRequest(&idgenv1.RetireRegionRequest{Name: name}))
	if err != nil {
		return o.regionResult("retire", name, nil, err)
	}
	return o.regionResult("retire", name, resp.Msg.GetRegion(), nil)
}
