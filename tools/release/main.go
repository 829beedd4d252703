// Command release serves and checks the released libraries (release/versions.txt):
//
//	go run ./tools/release proxy -out DIR [-rev REV] [-env]
//
// writes a file-based module proxy (GOPROXY=file://DIR/proxy) serving each library at its
// version, made from the library folders on disk, or from git revision REV; with -env it prints
// the environment (NAME=value lines) for a go command that builds a module without the
// workspace, taking the libraries from that proxy, with a module cache of its own (DIR/modcache,
// or with -keep-cache NAME one kept between runs in the user's cache folder, from which the
// libraries are removed first), and every other module as the environment does;
//
//	go run ./tools/release api-write
//
// writes each library's exported API (apidiff export data) to release/api/DIR/VERSION.apidiff;
//
//	go run ./tools/release api-check
//
// compares each library's API with the file of its last release and fails on an incompatible
// change unless the module's major version changed. scripts/release.sh runs the first two;
// the tests of this package run the check.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("want a command: proxy, api-write or api-check")
	}
	fs := flag.NewFlagSet("release "+args[0], flag.ContinueOnError)
	out := fs.String("out", "", "proxy: the folder to write the module proxy to")
	rev := fs.String("rev", "", "proxy: the git revision to zip the libraries from (default: the folders on disk)")
	printEnv := fs.Bool("env", false, "proxy: print the go command's environment for the proxy, NAME=value a line")
	keep := fs.String("keep-cache", "", "proxy -env: name a module cache of that environment kept between runs (without the libraries) in the user's cache folder, instead of OUT/modcache")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	root, err := findRoot(".")
	if err != nil {
		return err
	}
	libs, err := readVersions(root)
	if err != nil {
		return err
	}
	switch args[0] {
	case "proxy":
		if *out == "" {
			return fmt.Errorf("proxy: -out is required")
		}
		out, err := filepath.Abs(*out)
		if err != nil {
			return err
		}
		if err := buildProxy(root, filepath.Join(out, "proxy"), libs, *rev); err != nil {
			return err
		}
		if *printEnv {
			cache := filepath.Join(out, "modcache")
			if *keep != "" {
				if cache, err = keptCache(root, *keep); err != nil {
					return err
				}
			}
			if err := forgetLibs(cache); err != nil {
				return err
			}
			env, err := proxyEnv(filepath.Join(out, "proxy"), cache)
			if err != nil {
				return err
			}
			for _, kv := range env {
				fmt.Println(kv)
			}
		}
		return nil
	case "api-write", "api-check":
		apidiff, err := apidiffBin(root)
		if err != nil {
			return err
		}
		for _, l := range libs {
			dir := root + "/" + l.Dir
			if args[0] == "api-write" {
				// Export data holds the source's file names, so a file written from another
				// checkout differs in bytes: a file of the same API is kept as it is.
				if same, err := sameAPI(apidiff, dir, l.Path, apiFile(root, l, l.Version), nil); err != nil || same {
					if err != nil {
						return err
					}
					continue
				}
				if err := writeAPI(apidiff, dir, l.Path, apiFile(root, l, l.Version), nil); err != nil {
					return err
				}
				continue
			}
			report, err := checkAPI(apidiff, root, l, dir, nil)
			if err != nil {
				return err
			}
			fmt.Println(report)
		}
		return nil
	}
	return fmt.Errorf("unknown command %q: want proxy, api-write or api-check", args[0])
}
