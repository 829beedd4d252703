package cli

import (
	"context"
	"strings"
	"testing"
)

// TestRootHelpListsEveryCommand: idgenctl help lists every command that runs, by its full use
// line and its Short, under its group, and the common flags; a group command keeps cobra's own
// help.
func TestRootHelpListsEveryCommand(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{"help"}, strings.NewReader(""), false, &stdout, &stderr, func(string) string { return "" }); code != 0 {
		t.Fatalf("help: exit %d %s", code, stderr.String())
	}
	out := stdout.String()
	root := (&opts{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}).rootCmd()
	n := 0
	for _, c := range root.Commands() {
		for _, leaf := range leaves(c, true) {
			if !leaf.IsAvailableCommand() {
				continue
			}
			n++
			line := leaf.CommandPath() + strings.TrimPrefix(leaf.Use, leaf.Name())
			i := strings.Index(out, "  "+line+" ")
			if i < 0 {
				t.Errorf("help lacks %q", line)
				continue
			}
			if rest, _, _ := strings.Cut(out[i:], "\n"); !strings.HasSuffix(rest, leaf.Short) {
				t.Errorf("help's line for %q does not end with its Short %q: %q", line, leaf.Short, rest)
			}
		}
	}
	if n < 25 {
		t.Fatalf("only %d commands found", n)
	}
	for _, want := range []string{"\nIDs:\n  idgenctl explain ID ", "\nA region's leases and generators:\n", "\nOther:\n  idgenctl completion ",
		"\nCommon flags:\n", "--lease-store string", "($IDGEN_REGISTRY)", "Exit codes: 0 done, 1 failed, 2 bad usage"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if strings.Contains(out, "Available Commands:") || strings.Contains(out, "Global Flags:") {
		t.Errorf("the root's help is its own, not cobra's list of names:\n%s", out)
	}
	if t.Failed() {
		t.Logf("help:\n%s", out)
	}

	stdout.Reset()
	if code := run(context.Background(), []string{"leases", "--help"}, strings.NewReader(""), false, &stdout, &stderr, func(string) string { return "" }); code != 0 ||
		!strings.Contains(stdout.String(), "Available Commands:") || !strings.Contains(stdout.String(), "Global Flags:") {
		t.Errorf("leases --help: exit %d\n%s", code, stdout.String())
	}
}
