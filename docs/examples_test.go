package docs

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/localstack"
)

// An example is a block fenced as sh in README.md, docs/*.md or services/*/README.md: what a
// newcomer copies. Every one runs unless its fence says why it cannot ("```sh no-run: it starts
// a server that never returns"). A line "# → OUTPUT" is expected output: each such line must be
// found in the block's output, in order, "…" matching any text within a line.
type example struct {
	file  string
	line  int
	body  string
	skip  string // why it does not run; "" when it runs
	wants []string
}

var fence = regexp.MustCompile("^```sh(?: no-run: (.+))?$")

func examples(root string) ([]example, error) {
	files := []string{filepath.Join(root, "README.md")}
	for _, glob := range []string{"docs/*.md", "services/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	var out []example
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, f)
		var cur *example
		for i, line := range strings.Split(string(b), "\n") {
			switch {
			case cur == nil && strings.HasPrefix(line, "```sh"):
				m := fence.FindStringSubmatch(line)
				if m == nil {
					return nil, fmt.Errorf("%s:%d: a sh block's fence is \"```sh\" or \"```sh no-run: WHY\", not %q", rel, i+1, line)
				}
				cur = &example{file: rel, line: i + 1, skip: m[1]}
			case cur != nil && line == "```":
				out = append(out, *cur)
				cur = nil
			case cur != nil && strings.HasPrefix(strings.TrimSpace(line), "# → "):
				cur.wants = append(cur.wants, strings.TrimPrefix(strings.TrimSpace(line), "# → "))
			case cur != nil:
				cur.body += line + "\n"
			}
		}
	}
	return out, nil
}

// localPorts are make run's.
var localPorts = []int{7000, 7001, 7002, 7003, 7004, 7005}

// TestExamples runs every example of the READMEs and docs/, and every "Try:" line make run prints,
// against the local stack as make run starts it (package localstack on make run's ports, state in
// a directory of the test's own), from a directory that looks like the checkout.
func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack: not in -short")
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	all, err := examples(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range localPorts {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p), 200*time.Millisecond); err == nil {
			c.Close()
			t.Skipf("port %d is in use (is a make run up?): stop it to run the examples", p)
		}
	}
	// The checkout, with .idgen/ the test's own.
	work, state := t.TempDir(), t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".idgen" && e.Name() != ".git" {
			if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(work, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink(state, filepath.Join(work, ".idgen")); err != nil {
		t.Fatal(err)
	}
	// make run's stack (package localstack), its binaries in .idgen/bin as make run's are.
	ls := localstack.StartT(t, localstack.Options{Root: root, State: state, Logs: filepath.Join(state, "logs", "examples"), FixedPorts: true},
		localstack.StartOptions{Bin: filepath.Join(state, "bin")})
	banner := ls.Banner(".idgen/logs/examples/")

	// The banner's "Try:" lines are examples too.
	var try []string
	inTry := false
	for _, line := range strings.Split(banner, "\n") {
		if strings.TrimSpace(line) == "Try:" {
			inTry = true
			continue
		}
		if inTry && strings.HasPrefix(line, "  ") {
			try = append(try, strings.TrimSpace(line))
		} else if inTry && strings.TrimSpace(line) != "" {
			inTry = false
		}
	}
	if len(try) == 0 {
		t.Fatalf("make run printed no Try: lines:\n%s", banner)
	}
	all = append(all, example{file: "make run's banner", line: 1, body: strings.Join(try, "\n") + "\n"})

	ran, skipped := 0, 0
	for _, ex := range all {
		if ex.skip != "" {
			skipped++
			continue
		}
		ran++
		out, err := runExample(work, ex.body)
		if err != nil {
			t.Errorf("%s:%d: the example failed: %v\n--- example\n%s--- output\n%s", ex.file, ex.line, err, ex.body, out)
			continue
		}
		if want, ok := matchWants(ex.wants, out); !ok {
			t.Errorf("%s:%d: expected output not found (in order): %q\n--- example\n%s--- output\n%s", ex.file, ex.line, want, ex.body, out)
		}
	}
	t.Logf("%d examples ran, %d marked as not runnable here", ran, skipped)
}

// runExample runs one example in bash, stopping at its first failing command.
func runExample(dir, body string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+body)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	return out.String(), err
}

// matchWants finds each wanted line, in order, in out ("…" matching any text within a line; the
// commands' outputs may share a line, as curl's do without a final newline). It returns the first
// wanted line not found.
func matchWants(wants []string, out string) (string, bool) {
	at := 0
	for _, w := range wants {
		parts := strings.Split(w, "…")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		loc := regexp.MustCompile(strings.Join(parts, `[^\n]*?`)).FindStringIndex(out[at:])
		if loc == nil {
			return w, false
		}
		at += loc[1]
	}
	return "", true
}
