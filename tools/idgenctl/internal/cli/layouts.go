package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/spf13/cobra"
)

func (o *opts) layoutsCmd() *cobra.Command {
	show := &cobra.Command{Use: "show", Short: "the layouts of the registry's schedule, or of --schedule S", Args: exactArgs(0),
		Long: "The layouts of the schedule the registry serves, each with the time it starts at. With --schedule (or\n" +
			"IDGEN_SCHEDULE) the layouts of that schedule as idgenctl defines them, without the registry:\n" +
			"--schedule v1-v2 shows v1 and v2 and the cutover between them.",
		RunE: func(cmd *cobra.Command, _ []string) error { return o.layouts(cmd.Context()) }}
	return group("layouts", "the ID layouts and the schedule", show)
}

type layoutField struct {
	Name string `json:"name"`
	Bits int32  `json:"bits"`
}

type layoutPeriod struct {
	Layout   string        `json:"layout"`
	StartsAt string        `json:"starts_at"`
	Fields   []layoutField `json:"fields"`
}

type layoutsDoc struct {
	Schedule string         `json:"schedule"`
	Periods  []layoutPeriod `json:"periods"`
}

// builtinLayouts is the document of a schedule as idcore defines it, in the registry's form.
func builtinLayouts(sc idcore.Schedule) layoutsDoc {
	doc := layoutsDoc{Schedule: sc.Name()}
	for _, p := range sc.Periods() {
		pp := layoutPeriod{Layout: p.Layout.Name(), StartsAt: idcore.Epoch.Add(time.Duration(p.Start) * time.Millisecond).UTC().Format(time.RFC3339),
			Fields: []layoutField{{"timestamp", idcore.TimestampBits}}}
		for _, f := range p.Layout.Fields() {
			pp.Fields = append(pp.Fields, layoutField{f.Kind.String(), int32(f.Bits)})
		}
		doc.Periods = append(doc.Periods, pp)
	}
	return doc
}

func (o *opts) registryLayouts(ctx context.Context) (layoutsDoc, error) {
	c, err := o.registryClient()
	if err != nil {
		return layoutsDoc{}, err
	}
	resp, err := c.GetLayouts(ctx, connect.NewRequest(&idgenv1.GetLayoutsRequest{}))
	if err != nil {
		return layoutsDoc{}, fmt.Errorf("registry %s: %w (idgenctl layouts show --schedule v2|v1-v2 shows a schedule without the registry)", o.registry, err)
	}
	doc := layoutsDoc{Schedule: resp.Msg.GetSchedule()}
	for _, p := range resp.Msg.GetPeriods() {
		pp := layoutPeriod{Layout: p.GetLayout(), StartsAt: p.GetStartsAt().AsTime().UTC().Format(time.RFC3339)}
		for _, f := range p.GetFields() {
			pp.Fields = append(pp.Fields, layoutField{f.GetName(), f.GetBits()})
		}
		doc.Periods = append(doc.Periods, pp)
	}
	return doc, nil
}

func (o *opts) layouts(ctx context.Context) error {
	var doc layoutsDoc
	if o.scheduleSet {
		sc, err := o.sched()
		if err != nil {
			return err
		}
		doc = builtinLayouts(sc)
	} else {
		var err error
		if doc, err = o.registryLayouts(ctx); err != nil {
			return err
		}
	}
	return o.emit(doc, func(w io.Writer) {
		fmt.Fprintf(w, "schedule %s\n", doc.Schedule)
		fmt.Fprintln(w, "LAYOUT\tSTARTS AT\tFIELDS")
		for _, p := range doc.Periods {
			var fs []string
			for _, f := range p.Fields {
				fs = append(fs, fmt.Sprintf("%s(%d)", f.Name, f.Bits))
			}
			fmt.Fprintf(w, "%s\t%s\t%s\n", p.Layout, p.StartsAt, strings.Join(fs, " "))
		}
	})
}
