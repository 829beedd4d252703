// Command tfschema checks Terraform files against the AWS provider's schema, read offline from
// the .jsii manifest of the npm package @cdktf/provider-aws that package-lock.json pins (make
// setup installs it): every resource and data source type exists; every argument and nested
// block exists at its level (inside dynamic blocks too); required arguments and blocks are
// present; once-only blocks appear once; no computed-only attribute is set; literal values
// convert to their argument's type; and every reference (aws_x.name.attr, with indexes and
// splats, into nested blocks) names an attribute the type has.
//
//	go run ./infra/cmd/tfschema [-root DIR] [PATH ...]
//
// PATH defaults to infra/terraform. It prints one line per finding and exits 1 when there is one.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/idgen/idgen/infra/providerschema"
)

func main() {
	root := flag.String("root", "", "repository root (default: the folder with go.work, from the working directory up)")
	flag.Parse()
	if err := run(*root, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "tfschema:", err)
		os.Exit(1)
	}
}

var errFindings = errors.New("the configuration does not match the provider's schema")

func run(root string, paths []string) error {
	if root == "" {
		var err error
		if root, err = providerschema.FindRoot("."); err != nil {
			return err
		}
	}
	s, err := providerschema.Load(root)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		paths = []string{filepath.Join(root, "infra", "terraform")}
	}
	failed := false
	for _, p := range paths {
		findings, sum, err := s.CheckTree(p)
		if err != nil {
			return err
		}
		name := p
		if rel, err := filepath.Rel(root, p); err == nil && filepath.IsAbs(p) && !strings.HasPrefix(rel, "..") {
			name = rel
		}
		for _, f := range findings {
			fmt.Printf("%s:%d: %s\n", filepath.Join(name, f.File), f.Line, f.Msg)
		}
		fmt.Printf("tfschema: %s: %d modules, %d files, %d resources, %d data sources, %d provider blocks and %d references checked against %s %s (%s %s): %d findings\n",
			name, sum.Modules, sum.Files, sum.Resources, sum.DataSources, sum.Providers, sum.References,
			s.Provider, s.ProviderVersion, s.Package, s.PackageVersion, len(findings))
		failed = failed || len(findings) > 0
	}
	if failed {
		return errFindings
	}
	return nil
}
