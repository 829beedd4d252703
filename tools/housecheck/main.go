// Command housecheck holds the repository to two of its rules, over every package of the
// workspace (go.work), tests included; make lint runs it (go run ./tools/housecheck).
//
// One writer of the local stack's client config. Only libs/localstack
// (localstack.WriteClientConfig) writes the callers' client config, and only it spells the
// addresses of the local stack's generators; libs/idclient, which defines the type and reads it,
// and libs/topology, which plans its content, are the other owners. Anywhere else a finding is:
//
//   - an idclient.ClientConfig or idclient.RegionEndpoints literal, a call of
//     ClientConfig.WriteFile, or json.Marshal, MarshalIndent or Encoder.Encode of a ClientConfig:
//     a client config written by hand;
//   - the string "client_config.json" in a path built or written (filepath.Join, path.Join,
//     os.WriteFile, os.Create, os.OpenFile): use localstack.ClientConfigFile;
//   - a JSON text with an "endpoints" list: a client config spelled by hand;
//   - a generator address of the local stack (127.0.0.1 or localhost on the ports of make run's
//     generators, from localstack's description), except as a flag's default value (a program's
//     own default).
//
// The import layers. For each package, its imports inside the workspace, followed to the end:
//
//   - code that ships (every package that is not a test, outside libs/testenv) never imports
//     libs/testenv: the tests' fixtures stay out of the services, the libraries and the tools;
//   - libs/testenv, tests included, never imports services/, tools/ or examples/, nor the local
//     stack's description (package libs/localstack: it imports Terraform's planner, and the
//     fixtures are imported by every module's tests); it may import the stack's launchers
//     (libs/localstack/proc, dynalite, fakenlb, cmdline), which never import it back;
//   - the libraries under libs/ (tests aside) never import services/, tools/ or examples/.
//
// A line with a "housecheck:allow" comment (on it or the line above), saying why, is not
// reported. housecheck prints one finding a line (file:line: rule: what) and exits 1 when there
// is any, 2 when the packages do not load.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("housecheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("C", ".", "the repository root (the folder of go.work)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: housecheck [-C ROOT] [PACKAGES]\n\nChecks the client-config and import-layer rules over PACKAGES (default: every module of go.work, ./MODULE/...).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	findings, err := Check(*dir, fs.Args()...)
	if err != nil {
		fmt.Fprintln(stderr, "housecheck:", err)
		return 2
	}
	for _, f := range findings {
		fmt.Fprintln(stdout, f)
	}
	if len(findings) > 0 {
		fmt.Fprintf(stderr, "housecheck: %d findings\n", len(findings))
		return 1
	}
	return 0
}
