package testenv

import (
	"os"
	"strings"
	"testing"
)

// MarkedBlock returns what file holds between the lines start and end (each given whole, its
// newline included), such as a README block that a command prints and a test holds to its
// output; the test fails when the file or either line is missing.
func MarkedBlock(t testing.TB, file, start, end string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), start)
	if !ok {
		t.Fatalf("%s has no line %q", file, start)
	}
	block, _, ok := strings.Cut(rest, end)
	if !ok {
		t.Fatalf("%s has no line %q after %q", file, end, start)
	}
	return block
}
