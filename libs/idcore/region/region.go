// Package region describes idgen's regions: numbers 0–7 that go into v2 IDs, never reused once
// given, each with a failover peer. The registry service stores them; generators read them at
// start-up; Defaults is the built-in list used without a registry.
package region

import (
	"errors"
	"fmt"
	"time"
)

// MaxNumber is the largest region number the v2 layout holds (3 bits).
const MaxNumber = 7

// RegistryTable is the DynamoDB table (in the home region) the registry service keeps the
// regions in. It lives here, beside the regions, so the registry's driver and the operators'
// tools that guard the table name it without one importing the other.
const RegistryTable = "idgen-regions"

// Status values.
const (
	Active  = "active"
	Retired = "retired"
)

// Region is one region.
type Region struct {
	Number    int        `json:"number"`
	Name      string     `json:"name"`
	Peer      string     `json:"peer"`
	Status    string     `json:"status"`
	AddedAt   time.Time  `json:"added_at"`
	RetiredAt *time.Time `json:"retired_at"`
}

// Errors.
var (
	ErrUnknown = errors.New("region: unknown region")
	ErrRetired = errors.New("region: region is retired")
)

// launch is when the default regions were added: the epoch of the IDs.
var launch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Defaults returns the five default regions (docs/regions.md#default-regions-and-failover-peers).
func Defaults() []Region {
	mk := func(n int, name, peer string) Region {
		return Region{Number: n, Name: name, Peer: peer, Status: Active, AddedAt: launch}
	}
	return []Region{
		mk(0, "us-east-1", "us-west-2"),
		mk(1, "us-west-2", "us-east-1"),
		mk(2, "eu-west-1", "us-east-1"),
		mk(3, "ap-northeast-1", "ap-southeast-1"),
		mk(4, "ap-southeast-1", "ap-northeast-1"),
	}
}

// Find returns the region with the given name from list.
func Find(list []Region, name string) (Region, error) {
	for _, r := range list {
		if r.Name == name {
			return r, nil
		}
	}
	return Region{}, fmt.Errorf("%w: %q", ErrUnknown, name)
}

// ByNumber returns the region with the given number from list.
func ByNumber(list []Region, n int) (Region, bool) {
	for _, r := range list {
		if r.Number == n {
			return r, true
		}
	}
	return Region{}, false
}

// ForGenerator returns the region a generator configured with name may run as: it must exist and
// be active. A generator refuses to start otherwise.
func ForGenerator(list []Region, name string) (Region, error) {
	r, err := Find(list, name)
	if err != nil {
		return Region{}, err
	}
	if r.Status != Active {
		return Region{}, fmt.Errorf("%w: %s (number %d) was retired", ErrRetired, r.Name, r.Number)
	}
	return r, nil
}
