// Package flagenv gives every flag of a FlagSet an environment fallback: IDGEN_<NAME> with the
// flag name upper-cased and dashes as underscores. A flag given on the command line wins, and
// the usage names each flag's variable, so --help shows both ways of setting it. FromEnv and
// Usage do the same for one flag of any flag package (idgenctl's cobra flags).
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

// Setter is the part of a flag's value that the environment sets: the standard library's
// flag.Value and pflag's (cobra's) are both one.
type Setter interface{ Set(string) error }

// FromEnv sets value from the variable of the flag name (Name) when that variable is set, and
// reports whether it did. A value the flag refuses is an error naming the variable.
func FromEnv(name string, value Setter, getenv func(string) string) (bool, error) {
	v := getenv(Name(name))
	if v == "" {
		return false, nil
	}
	if err := value.Set(v); err != nil {
		return false, fmt.Errorf("$%s=%q is not a valid --%s: %w", Name(name), v, name, err)
	}
	return true, nil
}

// Usage returns the usage of the flag name with its variable named at the end
// ("… ($IDGEN_LISTEN)"), unless it names it already.
func Usage(name, usage string) string {
	if v := "$" + Name(name); !strings.Contains(usage, v) {
		return usage + " (" + v + ")"
	}
	return usage
}

// Parse names each flag's variable at the end of its usage (Annotate), sets each flag from its
// variable (FromEnv), then parses args over them. Arguments left over are an error.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	Annotate(fs)
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err == nil {
			_, err = FromEnv(f.Name, f.Value, getenv)
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

// Annotate names the variable at the end of the usage of every flag of fs that does not name it
// yet (Usage; Parse does it, and a program that parses flags its own way calls it first).
func Annotate(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) { f.Usage = Usage(f.Name, f.Usage) })
}
