// Package flagenv gives every flag of a FlagSet an environment fallback: IDGEN_<NAME> with the
// flag name upper-cased and dashes as underscores. A flag given on the command line wins.
package flagenv

import (
	"flag"
	"fmt"
	"strings"
)

// Name returns the environment variable of a flag: "lease-store" → "IDGEN_LEASE_STORE".
func Name(flagName string) string {
	return "IDGEN_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Parse sets each flag from its environment variable (when set), then parses args over them.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if v := getenv(Name(f.Name)); v != "" && err == nil {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("$%s: %w", Name(f.Name), e)
			}
		}
	})
	if err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}
