package dynalite_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/idgen/idgen/libs/localstack/dynalite"
)

// Start makes the tables on the server it started, and a table that cannot be made fails the
// start, the server killed.
func TestStartWithTables(t *testing.T) {
	ctx := context.Background()
	var made []string
	d, err := dynalite.Start(ctx, dynalite.Options{Name: "store-test", Tables: []dynalite.Tables{
		func(ctx context.Context, endpoint string) error { made = append(made, "a "+endpoint); return nil },
		func(ctx context.Context, endpoint string) error { made = append(made, "b "+endpoint); return nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	if want := []string{"a " + d.Endpoint, "b " + d.Endpoint}; !slices.Equal(made, want) {
		t.Fatalf("tables made %v, want %v", made, want)
	}
	answers := func() error {
		resp, err := http.Get(d.Endpoint)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := answers(); err != nil {
		t.Fatalf("the server does not answer: %v", err)
	}
	d.Kill()
	if err := d.Start(); err != nil { // again on its port
		t.Fatal(err)
	}
	if err := answers(); err != nil {
		t.Fatalf("the restarted server does not answer: %v", err)
	}

	refused := errors.New("no such table spec")
	bad, err := dynalite.Start(ctx, dynalite.Options{Tables: []dynalite.Tables{func(context.Context, string) error { return refused }}})
	if !errors.Is(err, refused) || bad != nil {
		t.Fatalf("Start with a table that cannot be made: %v, %v; want the table's error", bad, err)
	}
}
