package localstack

import (
	"context"
	"errors"
	"testing"

	"github.com/idgen/idgen/libs/localstack/proc"
)

// StartT is Start for tests: the test fails when the stack does not build or start (with the end
// of the failing service's log), and the stack is stopped when the test ends, printing the end of
// each service's log if the test failed.
func StartT(t testing.TB, o Options, so StartOptions) *Stack {
	t.Helper()
	s, err := Start(context.Background(), o, so)
	var se *StartError
	if errors.As(err, &se) {
		t.Fatalf("%v\nthe end of %s:\n%s", err, se.Log, se.Tail)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			for _, svc := range s.Services {
				t.Logf("%s log, last %d lines:\n%s", svc.Name, proc.TailLines, s.Proc(svc.Name).Tail(proc.TailLines))
			}
		}
	})
	return s
}
