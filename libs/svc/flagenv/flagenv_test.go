package flagenv_test

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/svc/flagenv"
)

func TestEnvironmentFallbackAndFlagsWin(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	listen := fs.String("listen", "a", "address")
	store := fs.String("lease-store", "b", "store")
	env := map[string]string{"IDGEN_LISTEN": "from-env", "IDGEN_LEASE_STORE": "env-store"}
	if err := flagenv.Parse(fs, []string{"--listen", "from-flag"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if *listen != "from-flag" || *store != "env-store" {
		t.Fatalf("listen %q, lease-store %q", *listen, *store)
	}
}

func TestRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"leftover argument", []string{"extra"}, nil, "unexpected arguments"},
		{"bad value in the environment", nil, map[string]string{"IDGEN_COUNT": "x"}, "$IDGEN_COUNT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.Int("count", 1, "how many")
			err := flagenv.Parse(fs, tt.args, func(k string) string { return tt.env[k] })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestUsageNamesEveryVariable: --help shows each flag's IDGEN_* variable once, whether its
// usage named it already or not.
func TestUsageNamesEveryVariable(t *testing.T) {
	var out bytes.Buffer
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(&out)
	fs.String("listen", "", "address")
	fs.Bool("insecure-dev", false, "plaintext ($IDGEN_INSECURE_DEV)")
	fs.Func("cors-origins", "origins", func(string) error { return nil })
	if err := flagenv.Parse(fs, []string{"--help"}, func(string) string { return "" }); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, name := range []string{"listen", "insecure-dev", "cors-origins"} {
		if n := strings.Count(out.String(), "($"+flagenv.Name(name)+")"); n != 1 {
			t.Errorf("usage names $%s %d times:\n%s", flagenv.Name(name), n, out.String())
		}
	}
}
