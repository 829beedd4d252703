// Package cli is idgenctl: every command, its flags, and its text and JSON output. The output is
// stable: runbooks are written on it.
//
// The command tree is built with cobra, one file per command group, each group's own flags in an
// options struct of its own beside the common ones (opts); the root's help lists every command
// from the tree, by its use line and summary (help.go). Every flag also reads
// IDGEN_<FLAG> from the environment (a flag on the command line wins; a bad value in the
// environment is an error naming the variable), except --yes and the plan guard's override,
// which must be typed. Flags may come before, between or after the words of the command.
package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/localstack"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/flagenv"
	"github.com/idgen/idgen/tools/idgenctl/internal/infra"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// localGenerators are the local stack's generators (make run), from the stack's description.
var localGenerators = localstack.MakeRunGenerators()

// opts holds the common flags (the root's, which every command takes) and the streams of one run.
// Each command group keeps its own flags in a struct of its own that embeds opts (dupcheckOpts,
// leasesOpts, regionsOpts, incidentOpts, infraOpts).
type opts struct {
	output, schedule, registry, leaseStore, table, region, generators string
	tlsCert, tlsKey, ca                                               string

	// regionSet: --region or IDGEN_REGION was given; regionFlag: --region on the command line.
	regionSet, regionFlag bool
	// scheduleSet: --schedule or IDGEN_SCHEDULE was given.
	scheduleSet bool

	stdout, stderr io.Writer
	in             io.Reader // answers to confirmations
	terminal       bool      // in is a terminal: confirmations may be asked
	getenv         func(string) string
}

// Run runs one command and returns the exit code: 0 done, 1 failed, 2 bad usage. Confirmations
// are read from the process's standard input when it is a terminal.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	term := isatty.IsTerminal(os.Stdin.Fd()) || isatty.IsCygwinTerminal(os.Stdin.Fd())
	return run(ctx, args, os.Stdin, term, stdout, stderr, getenv)
}

func run(ctx context.Context, args []string, in io.Reader, terminal bool, stdout, stderr io.Writer, getenv func(string) string) int {
	o := &opts{stdout: stdout, stderr: stderr, in: in, terminal: terminal, getenv: getenv}
	root := o.rootCmd()
	root.SetArgs(wordsFirst(root, args))
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetIn(in)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	path := "idgenctl"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(stderr, "idgenctl: %s\n", ee.msg)
		}
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "idgenctl: %v\nRun '%s --help' for usage.\n", err, path)
		return 2
	}
	fmt.Fprintf(stderr, "idgenctl: %v\n", err)
	return 1
}

// usageError is bad usage: exit 2, with a pointer to the command's help.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// exitError ends a command with its own exit code: dupcheck's 1 (duplicates found) and 2
// (unreadable input), a refused confirmation's 2.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// enumValue is a string flag that accepts only some values, so a bad value is refused where it
// is set: on the command line or from the environment.
type enumValue struct {
	p       *string
	allowed []string
}

func newEnum(p *string, def string, allowed ...string) *enumValue {
	*p = def
	return &enumValue{p, allowed}
}

func (e *enumValue) String() string { return *e.p }
func (e *enumValue) Type() string   { return strings.Join(e.allowed, "|") }
func (e *enumValue) Set(s string) error {
	if !slices.Contains(e.allowed, s) {
		return fmt.Errorf("want %s", strings.Join(e.allowed, " or "))
	}
	*e.p = s
	return nil
}

// noEnv are the flags that never come from the environment: a confirmation and the plan guard's
// override must be typed each time.
var noEnv = map[string]bool{"yes": true, strings.TrimPrefix(infra.OverrideFlag, "--"): true, "help": true}

func (o *opts) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "idgenctl",
		Short:         "the idgen operators' tool",
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          groupArgs,
		RunE:          groupRun,
		// The completion scripts and help need no flag values: a bad IDGEN_* does not stop them.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			for c := cmd; c != nil; c = c.Parent() {
				if c.Name() == "completion" || c.Name() == "help" || strings.HasPrefix(c.Name(), "__complete") {
					return nil
				}
			}
			return o.resolveFlags(cmd)
		},
	}
	root.CompletionOptions.HiddenDefaultCmd = false
	pf := root.PersistentFlags()
	pf.Var(newEnum(&o.output, "text", "text", "json"), "output", "output format: text or json")
	pf.Var(newEnum(&o.schedule, "v2", "v2", "v1-v2"), "schedule", "layout schedule IDs are read by: v2 or v1-v2")
	pf.StringVar(&o.registry, "registry", "http://127.0.0.1:7000", "registry URL")
	pf.StringVar(&o.leaseStore, "lease-store", "", "sqlite:PATH or dynamodb:ENDPOINT_URL, or REGION=STORE pairs (default: the local stack's .idgen/leases-<region>.db)")
	pf.Var(newEnum(&o.table, "v2", "v2", "v1"), "table", "lease table: v2 (the region's idgen-leases-v2) or v1 (the global idgen-leases)")
	pf.StringVar(&o.region, "region", "us-east-1", "region")
	pf.StringVar(&o.generators, "generators", "", "generator URLs, comma-separated, or REGION=URL pairs (default: the local stack's)")
	pf.StringVar(&o.tlsCert, "tls-cert", "", "client certificate for mutual TLS")
	pf.StringVar(&o.tlsKey, "tls-key", "", "client key")
	pf.StringVar(&o.ca, "ca", "", "CA of the services' certificates")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("schedule", cobra.FixedCompletions([]string{"v2", "v1-v2"}, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("table", cobra.FixedCompletions([]string{"v2", "v1"}, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("region", o.completeRegions)

	root.SetFlagErrorFunc(flagError)
	groups := map[string][]*cobra.Command{
		"ids":       {o.explainCmd(), o.decodeCmd(), o.dupcheckCmd(), o.incidentCmd()},
		"registry":  {o.regionsCmd(), o.layoutsCmd()},
		"fleet":     {o.leasesCmd(), o.healthCmd()},
		"files":     {o.callersCmd(), o.routesCmd()},
		"publicids": {o.publicidsCmd()},
		"infra":     {o.infraCmd()},
	}
	for _, g := range commandGroups {
		root.AddCommand(groups[g.ID]...)
	}
	setHelp(root, groups)
	annotateEnv(root)
	return root
}

// annotateEnv names each flag's variable at the end of its usage ("… ($IDGEN_OUTPUT)"), so
// --help shows both ways of setting it.
func annotateEnv(c *cobra.Command) {
	note := func(f *pflag.Flag) {
		if !noEnv[f.Name] {
			f.Usage = flagenv.Usage(f.Name, f.Usage)
		}
	}
	c.LocalNonPersistentFlags().VisitAll(note)
	c.PersistentFlags().VisitAll(note)
	for _, sub := range c.Commands() {
		annotateEnv(sub)
	}
}

// completeRegions completes --region with the built-in regions' names.
func (o *opts) completeRegions(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	var names []string
	for _, r := range o.names(context.Background()).list {
		names = append(names, r.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// wordsFirst moves the words that name the command ahead of the flags given before them
// (idgenctl --yes leases quarantine 3 → leases quarantine --yes 3), so that a command's own flag
// may also come before its words: cobra finds the command by skipping flags, and must know
// which of them take a value, which the root alone cannot say for a flag it does not have.
// Whether a flag takes a value is read from the flags of the command found so far and of
// every command below it. The rest keeps its order; what follows "--" is left as it is.
func wordsFirst(root *cobra.Command, args []string) []string {
	var words, rest []string
	cmd := root
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(append(words, rest...), args[i:]...)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			rest = append(rest, a)
			if !strings.Contains(a, "=") && takesValue(cmd, strings.TrimLeft(a, "-"), !strings.HasPrefix(a, "--")) && i+1 < len(args) {
				i++
				rest = append(rest, args[i])
			}
		default:
			sub, _, err := cmd.Find([]string{a})
			if err != nil || sub == cmd {
				// An argument of the command: its words end here.
				return append(append(words, rest...), args[i:]...)
			}
			words, cmd = append(words, a), sub
		}
	}
	return append(words, rest...)
}

// takesValue reports whether the flag name (a shorthand when short) of cmd, or of a command below
// it, takes a value; a flag none of them has is taken to have none.
func takesValue(cmd *cobra.Command, name string, short bool) bool {
	lookup := func(fs *pflag.FlagSet) *pflag.Flag {
		if short {
			if len(name) != 1 {
				return nil // several shorthands at once take no value but the last's
			}
			return fs.ShorthandLookup(name)
		}
		return fs.Lookup(name)
	}
	for _, fs := range []*pflag.FlagSet{cmd.LocalFlags(), cmd.InheritedFlags()} {
		if f := lookup(fs); f != nil {
			return f.NoOptDefVal == ""
		}
	}
	for _, sub := range cmd.Commands() {
		if takesValue(sub, name, short) {
			return true
		}
	}
	return false
}

// resolveFlags fills every flag not given on the command line from its IDGEN_* variable
// (flagenv: a bad value is an error naming the variable), and notes which of the region and
// schedule were chosen.
func (o *opts) resolveFlags(cmd *cobra.Command) error {
	// Given on the command line, before the environment fills the rest.
	o.regionFlag = cmd.Flags().Changed("region")
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || noEnv[f.Name] {
			return
		}
		set, e := flagenv.FromEnv(f.Name, f.Value, o.getenv)
		if e != nil {
			err = usageError{e.Error()}
		}
		f.Changed = set
	})
	if err != nil {
		return err
	}
	o.regionSet = cmd.Flags().Changed("region")
	o.scheduleSet = cmd.Flags().Changed("schedule")
	return nil
}

var negativeArg = regexp.MustCompile(`^-[0-9]+$`)

// flagError turns cobra's flag errors into usage errors, an unknown flag's naming the command
// that lacks it; an argument such as -1 is a negative number, not a flag: the commands that
// take an ID say the ID is negative.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if _, arg, ok := strings.Cut(msg, "unknown shorthand flag: "); ok {
		if _, tok, ok := strings.Cut(arg, " in "); ok && negativeArg.MatchString(tok) {
			if cmd.Annotations["takes"] == "id" {
				_, perr := idcore.ParseID(tok)
				return fmt.Errorf("%s: %w", cmd.Name(), perr)
			}
			return usagef("%s: %s is negative (a negative number is not a flag; there is none here)", cmd.CommandPath(), tok)
		}
	}
	if strings.HasPrefix(msg, "unknown flag: ") || strings.HasPrefix(msg, "unknown shorthand flag: ") {
		msg += " (not a flag of " + cmd.CommandPath() + ")"
	}
	return usageError{msg}
}

// groupArgs refuses words a group command (or the root) does not know.
func groupArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %s", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, ", "))
	}
	return usageError{msg}
}

// groupRun shows a group's subcommands.
func groupRun(cmd *cobra.Command, _ []string) error { return cmd.Help() }

// group is a command that only holds subcommands.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: groupArgs, RunE: groupRun}
	c.AddCommand(subs...)
	return c
}

// exactArgs wants n arguments, named in the message.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s: want %d argument(s), got %d", cmd.UseLine(), n, len(args))
		}
		return nil
	}
}

func (o *opts) sched() (idcore.Schedule, error) { return idcore.ScheduleByName(o.schedule) }

// httpClient returns a client with the mutual TLS settings, if any.
func (o *opts) httpClient() (*http.Client, error) {
	if o.tlsCert == "" && o.ca == "" {
		return &http.Client{Timeout: 10 * time.Second}, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.ca != "" {
		pool, err := auth.CertPool(o.ca)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if o.tlsCert != "" {
		c, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}, nil
}

func (o *opts) registryClient() (idgenv1connect.RegistryServiceClient, error) {
	hc, err := o.httpClient()
	if err != nil {
		return nil, err
	}
	return idgenv1connect.NewRegistryServiceClient(hc, o.registry), nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
