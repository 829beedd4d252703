package testenv

import (
	"testing"

	"github.com/idgen/idgen/libs/localstack/fakenlb"
)

// FakeNLB is a fake, for tests, of an AWS Network Load Balancer in front of one target group
// (libs/localstack/fakenlb).
type FakeNLB = fakenlb.NLB

// NLBConfig is a FakeNLB's target group settings (the fleet's: 10 s, 3 and 3; tests use less).
type NLBConfig = fakenlb.Config

// StartFakeNLB starts a fake NLB with no targets on a loopback port, until the test ends.
func StartFakeNLB(t testing.TB, cfg NLBConfig) *FakeNLB {
	t.Helper()
	lb, err := fakenlb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lb.Close)
	return lb
}
