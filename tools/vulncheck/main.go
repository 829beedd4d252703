// Command vulncheck runs govulncheck (symbol level, against a local copy of the Go vulnerability
// database) over the given packages and fails on any vulnerability the code calls, except those
// allow.txt lists with a reason.
//
//	go run ./tools/vulncheck -db .tools/vulndb -allow tools/vulncheck/allow.txt ./services/generator/... …
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	db := flag.String("db", ".tools/vulndb", "directory of the vulnerability database")
	allowFile := flag.String("allow", "tools/vulncheck/allow.txt", "reviewed exceptions: ID and reason per line")
	bin := flag.String("govulncheck", "govulncheck", "govulncheck binary")
	dir := flag.String("C", ".", "module directory to run govulncheck in (patterns may reach other workspace modules)")
	flag.Parse()
	os.Exit(run(*db, *allowFile, *bin, *dir, flag.Args(), os.Stdout, os.Stderr))
}

func run(db, allowFile, bin, dir string, patterns []string, stdout, stderr io.Writer) int {
	allow, err := readAllow(allowFile)
	if err != nil {
		fmt.Fprintln(stderr, "vulncheck:", err)
		return 2
	}
	abs, err := filepath.Abs(db)
	if err != nil {
		fmt.Fprintln(stderr, "vulncheck:", err)
		return 2
	}
	cmd := exec.Command(bin, append([]string{"-db", "file://" + abs, "-format", "json"}, patterns...)...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(stderr, "vulncheck: govulncheck:", err)
		return 2
	}
	called, err := calledVulns(&out)
	if err != nil {
		fmt.Fprintln(stderr, "vulncheck:", err)
		return 2
	}
	bad := 0
	for _, id := range called {
		if why, ok := allow[id.id]; ok {
			fmt.Fprintf(stdout, "vulncheck: %s in %s is called, allowed: %s\n", id.id, id.module, why)
			continue
		}
		bad++
		fmt.Fprintf(stdout, "vulncheck: %s in %s is called by the code (fixed in %s)\n", id.id, id.module, id.fixed)
	}
	if bad > 0 {
		fmt.Fprintf(stdout, "vulncheck: %d vulnerabilities reachable\n", bad)
		return 1
	}
	fmt.Fprintf(stdout, "vulncheck: no reachable vulnerability (%d allowed with a reason)\n", len(called))
	return 0
}

type vuln struct{ id, module, fixed string }

// calledVulns reads govulncheck's JSON stream and returns the vulnerabilities whose trace
// reaches a function (called), one per ID.
func calledVulns(r io.Reader) ([]vuln, error) {
	dec := json.NewDecoder(r)
	seen := map[string]vuln{}
	for dec.More() {
		var msg struct {
			Finding *struct {
				OSV          string `json:"osv"`
				FixedVersion string `json:"fixed_version"`
				Trace        []struct {
					Module   string `json:"module"`
					Function string `json:"function"`
				} `json:"trace"`
			} `json:"finding"`
		}
		if err := dec.Decode(&msg); err != nil {
			return nil, fmt.Errorf("govulncheck output: %w", err)
		}
		f := msg.Finding
		if f == nil || len(f.Trace) == 0 || f.Trace[0].Function == "" {
			continue
		}
		fixed := f.FixedVersion
		if fixed == "" {
			fixed = "no release yet"
		}
		seen[f.OSV] = vuln{f.OSV, f.Trace[0].Module, fixed}
	}
	out := make([]vuln, 0, len(seen))
	for _, v := range seen {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

func readAllow(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, why, ok := strings.Cut(line, " ")
		if !ok || strings.TrimSpace(why) == "" {
			return nil, fmt.Errorf("%s:%d: want an ID and the reason it does not apply", path, n)
		}
		out[id] = strings.TrimSpace(why)
	}
	return out, sc.Err()
}
