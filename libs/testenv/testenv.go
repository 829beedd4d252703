// Package testenv starts the real servers idgen's tests talk to (dynalite, a DynamoDB-compatible
// server, and redis-server) on free loopback ports, and stops them when the test ends. A server
// that cannot start fails the test: it is never skipped.
package testenv

import (
	"context"
	"testing"

	"github.com/idgen/idgen/libs/localstack/dynalite"
	"github.com/idgen/idgen/libs/localstack/proc"
)

// Root returns the repository root: the nearest parent holding package-lock.json and go.work.
func Root() (string, error) { return proc.RepoRoot() }

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := PickPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// PickPort returns a loopback TCP port that was free a moment ago.
func PickPort() (int, error) { return proc.PickPort() }

// Dynalite is a running dynalite server (libs/localstack/dynalite) a test started.
type Dynalite struct{ *dynalite.Server }

// StartDynalite starts dynalite on a free port, keeping its data in dir ("" for memory only), and
// stops it at the end of the test.
func StartDynalite(t testing.TB, dir string) *Dynalite {
	t.Helper()
	d, err := NewDynalite(0, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d
}

// StartDynaliteWithTables starts dynalite as StartDynalite does and creates tables on it (a
// store's table maker: dynamolease.Tables, dynamomap.Tables, dynamostore.Tables): the test fails
// when the server does not start or a table cannot be made.
func StartDynaliteWithTables(t testing.TB, dir string, tables ...dynalite.Tables) *Dynalite {
	t.Helper()
	d, err := dynalite.Start(context.Background(), dynalite.Options{Dir: dir, Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return &Dynalite{d}
}

// NewDynalite starts dynalite on port (0 for a free one), keeping its data in dir ("" for memory
// only). The caller stops it (Stop or Kill).
func NewDynalite(port int, dir string) (*Dynalite, error) {
	d, err := dynalite.New(port, dir)
	if err != nil {
		return nil, err
	}
	return &Dynalite{d}, nil
}

// Restart starts dynalite again on the same port and data folder (after Stop or Kill).
func (d *Dynalite) Restart(t testing.TB) {
	t.Helper()
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
}
