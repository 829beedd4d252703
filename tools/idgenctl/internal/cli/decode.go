package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/idgen/idgen/libs/idcore"
	"github.com/spf13/cobra"
)

// idCommand is a command whose one argument is an ID (a negative one is reported as such, not as
// an unknown flag).
func idCommand(use, short string, run func(ctx context.Context, id string) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: exactArgs(1), Annotations: map[string]string{"takes": "id"},
		RunE: func(cmd *cobra.Command, args []string) error { return run(cmd.Context(), args[0]) }}
}

func (o *opts) explainCmd() *cobra.Command {
	return idCommand("explain ID", "the bit diagram of an ID, its region named (registry, else built-in list)", o.explain)
}

func (o *opts) decodeCmd() *cobra.Command {
	return idCommand("decode ID", "an ID's fields, its region named (registry, else built-in list)", o.decode)
}

// idAndSchedule parses an ID argument and returns it with the schedule to read it by.
func (o *opts) idAndSchedule(s string) (idcore.ID, idcore.Schedule, error) {
	id, err := idcore.ParseID(s)
	if err != nil {
		return 0, idcore.Schedule{}, err
	}
	sc, err := o.sched()
	return id, sc, err
}

func (o *opts) explain(ctx context.Context, s string) error {
	id, sc, err := o.idAndSchedule(s)
	if err != nil {
		return err
	}
	out, err := sc.Explain(id)
	if err != nil {
		return err
	}
	d, _ := sc.Decode(id)
	rn := o.names(ctx)
	doc := decodedJSON(d, rn)
	return o.emit(doc, func(w io.Writer) {
		fmt.Fprint(w, out)
		if d.HasRegion {
			fmt.Fprintf(w, "region: %s\n", rn.describe(d.Region))
		}
	})
}

type decodedOut struct {
	ID           string  `json:"id"`
	Layout       string  `json:"layout"`
	CreatedAt    string  `json:"created_at"`
	RegionNumber *int    `json:"region_number,omitempty"`
	Machine      int     `json:"machine"`
	Sequence     int     `json:"sequence"`
	Timestamp    int64   `json:"timestamp_ms_since_epoch"`
	Region       *string `json:"region,omitempty"`
	RegionSource string  `json:"region_source,omitempty"`
}

func decodedJSON(d idcore.Decoded, rn regionNames) decodedOut {
	out := decodedOut{ID: d.ID.String(), Layout: d.Layout, CreatedAt: d.Time.Format("2006-01-02T15:04:05.000Z"),
		Machine: d.Machine, Sequence: d.Sequence, Timestamp: d.Timestamp}
	if d.HasRegion {
		n := d.Region
		out.RegionNumber = &n
		name := rn.name(n)
		out.Region, out.RegionSource = &name, rn.sourceWord()
	}
	return out
}

func (o *opts) decode(ctx context.Context, s string) error {
	id, sc, err := o.idAndSchedule(s)
	if err != nil {
		return err
	}
	d, err := sc.Decode(id)
	if err != nil {
		return err
	}
	rn := o.names(ctx)
	out := decodedJSON(d, rn)
	return o.emit(out, func(w io.Writer) {
		fmt.Fprintf(w, "id\t%s\nlayout\t%s\ncreated_at\t%s\n", out.ID, out.Layout, out.CreatedAt)
		if out.RegionNumber != nil {
			fmt.Fprintf(w, "region\t%s\n", rn.describe(*out.RegionNumber))
			fmt.Fprintf(w, "region_number\t%d\n", *out.RegionNumber)
		}
		fmt.Fprintf(w, "machine\t%d\nsequence\t%d\n", out.Machine, out.Sequence)
	})
}
