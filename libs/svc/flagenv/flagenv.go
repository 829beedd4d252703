// Package flagenv gives every flag of a FlagSet an environment fallback: IDGEN_<NAME> with the
// flag name upper-cased and dashes as underscores. A flag given on the command line wins, and
// the usage names each flag's variable, so --help shows both ways of setting it.
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

// Parse names each flag's variable at the end of its usage ("… ($IDGEN_LISTEN)") unless the
// usage names it already, sets each flag from its variable (when set), then parses args over
// them. Arguments left over are an error.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	Annotate(fs)
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

// Annotate appends " ($IDGEN_<NAME>)" to the usage of every flag of fs that does not name its
// variable yet (Parse does it; a program that parses flags its own way calls it first).
func Annotate(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if v := "$" + Name(f.Name); !strings.Contains(f.Usage, v) {
			f.Usage += " (" + v + ")"
		}
	})
}
