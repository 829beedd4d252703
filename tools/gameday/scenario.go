package gameday

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"
)

// Fault is what a phase does to its region.
type Fault string

// The faults. Each takes a region down for the phase's Hold and brings it back, except Steady
// (nothing) and Rolling (the region stays up throughout).
const (
	Steady    Fault = "steady"     // load only
	Kill      Fault = "kill"       // every generator of the region killed (SIGKILL), then started again
	Freeze    Fault = "freeze"     // every generator frozen (SIGSTOP), then thawed (SIGCONT)
	StoreDown Fault = "store-down" // the region's lease store frozen past the generators' fence, then thawed
	Rolling   Fault = "rolling"    // the region's generators restarted one at a time (SIGTERM, start, healthy)
	// The registry killed (SIGKILL), the region's generators killed and, after the hold, started
	// again while the registry is still down; the registry started again half the settle after
	// they are healthy.
	RegistryDown Fault = "registry-down"
	// The public-ID side of a region (scenario's customers): its internal API, its gateway and
	// its store of record (dynalite) killed and the store's data gone; after the hold a new, empty
	// store (the table made again) and new processes, which fill the region from the others
	// before it takes customers.
	PublicIDLost Fault = "public-id-lost"
	// The region's public-ID store of record frozen (SIGSTOP), then thawed (SIGCONT).
	PublicIDFreeze Fault = "public-id-freeze"
	// The region and its peer partitioned: neither region's public-ID processes reach the other's
	// store (the proxies between them cut), then healed.
	PublicIDPartition Fault = "public-id-partition"
)

var faults = []Fault{Steady, Kill, Freeze, StoreDown, Rolling, RegistryDown, PublicIDLost, PublicIDFreeze, PublicIDPartition}

// lost reports whether the fault takes its region's fleet down for the phase's hold.
func (f Fault) lost() bool { return f == Kill || f == Freeze || f == StoreDown || f == RegistryDown }

// customer reports whether the fault is done to the public-ID side of a region (the generators
// untouched).
func (f Fault) customer() bool {
	return f == PublicIDLost || f == PublicIDFreeze || f == PublicIDPartition
}

// Customers is the public-ID side of a game day: per region of Regions, a store of record
// (dynalite), the internal API and the gateway on --store regions:FILE, an order service and a
// customer client that publishes IDs of the region's generators and resolves them at every
// region's gateway.
type Customers struct {
	// Regions are the topology's regions that run it; each one's peer (the topology's) must be
	// one of them.
	Regions []string `json:"regions"`
	// Rate is each customer client's publishes a second (each followed by a resolve at every
	// region's gateway).
	Rate float64 `json:"rate"`
	// ErrorPct bounds the customer errors (any answer but 200 and 404, a timeout, a refused
	// connection outside its region's loss) in a phase with a public-ID fault, as a percentage of
	// the phase's requests; a phase without one allows none.
	ErrorPct float64 `json:"error_pct"`
}

// Duration is a time.Duration written as a string in JSON ("20s").
type Duration time.Duration

// UnmarshalJSON reads "20s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"20s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes "20s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Scenario is a game day, as its file says it (scenarios/*.json). The same file drives the local
// run (make gameday) and the staging drill (runbooks/region-down.md): the phases, their order and
// lengths, and which region each fault takes, drawn from the seed when the file says "random".
type Scenario struct {
	Name string `json:"name"`
	// GeneratorsPerRegion behind each region's load balancer (two or more).
	GeneratorsPerRegion int `json:"generators_per_region"`
	// The generators' and embedded nodes' lease settings (the lease tables' rules).
	Lease  Duration `json:"lease"`
	Renew  Duration `json:"renew"`
	Margin Duration `json:"margin"`
	// Rate is each caller's IDs a second; Batch its refill size.
	Rate  float64 `json:"rate"`
	Batch int     `json:"batch"`
	// ProbeEvery and HedgeAfter are the callers' client settings (libs/idclient's defaults: 1s, 50ms).
	ProbeEvery Duration `json:"probe_every"`
	HedgeAfter Duration `json:"hedge_after"`
	// NodeRate is each embedded node's IDs a second (batches of 100).
	NodeRate float64 `json:"node_rate"`
	// BackHome bounds the time from a lost region's fleet being healthy again to its caller's
	// IDs carrying its own number again.
	BackHome Duration `json:"back_home"`
	// Customers, when set, runs the public-ID side too (needed by the public-id-* faults).
	Customers *Customers `json:"customers,omitempty"`
	// Phases run in order.
	Phases []Phase `json:"phases"`
}

// Phase is one step of a scenario.
type Phase struct {
	Name  string `json:"name"`
	Fault Fault  `json:"fault"`
	// Region the fault is done to: a region name, or "random" (drawn from the seed). Not for steady.
	Region string `json:"region,omitempty"`
	// Hold is how long the region stays lost (kill, freeze, store-down, registry-down); for
	// store-down it must pass the fence (lease - margin).
	Hold Duration `json:"hold,omitempty"`
	// Settle is how long the phase goes on once the region is healthy again (or, for steady, the
	// whole phase). In registry-down the registry comes back half of it after the region is
	// healthy: that half must be back_home or more, so that the caller's return is seen while the
	// registry is still down.
	Settle Duration `json:"settle"`
}

// LoadScenario reads and checks a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gameday: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("gameday: %s: %w", path, err)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("gameday: %s: %w", path, err)
	}
	return &s, nil
}

func (s *Scenario) check() error {
	if s.GeneratorsPerRegion < 2 {
		return fmt.Errorf("generators_per_region %d: a region has two or more", s.GeneratorsPerRegion)
	}
	if s.Lease <= 0 || s.Renew <= 0 || s.Margin <= 0 || s.Renew.D() > s.Lease.D()/3 || s.Margin.D() >= s.Lease.D()-s.Renew.D() {
		return fmt.Errorf("lease %v, renew %v, margin %v: want renew <= lease/3 and margin < lease - renew", s.Lease.D(), s.Renew.D(), s.Margin.D())
	}
	if s.Rate <= 0 || s.Batch < 1 || s.Batch > 1000 || s.NodeRate <= 0 || s.BackHome <= 0 {
		return fmt.Errorf("rate, node_rate and back_home must be positive and batch 1-1000")
	}
	if len(s.Phases) == 0 {
		return fmt.Errorf("no phases")
	}
	if c := s.Customers; c != nil && (len(c.Regions) < 2 || c.Rate <= 0 || c.ErrorPct < 0 || c.ErrorPct > 100) {
		return fmt.Errorf("customers: want two or more regions, a positive rate and error_pct 0-100")
	}
	for i, p := range s.Phases {
		if !slices.Contains(faults, p.Fault) {
			return fmt.Errorf("phase %d (%s): fault %q, want one of %v", i+1, p.Name, p.Fault, faults)
		}
		if p.Name == "" {
			return fmt.Errorf("phase %d has no name", i+1)
		}
		if p.Fault == Steady && (p.Region != "" || p.Hold != 0) {
			return fmt.Errorf("phase %s: steady takes no region and no hold", p.Name)
		}
		if p.Fault != Steady && p.Region == "" {
			return fmt.Errorf("phase %s: %s needs a region (a name or \"random\")", p.Name, p.Fault)
		}
		if (p.Fault.lost() || p.Fault.customer()) != (p.Hold > 0) {
			return fmt.Errorf("phase %s: a hold is for kill, freeze, store-down, registry-down and the public-id-* faults, and they need one", p.Name)
		}
		if p.Fault.customer() && s.Customers == nil {
			return fmt.Errorf("phase %s: %s needs the scenario's customers", p.Name, p.Fault)
		}
		if p.Fault.customer() && p.Region != "random" && !slices.Contains(s.Customers.Regions, p.Region) {
			return fmt.Errorf("phase %s: region %s does not run customers (%v)", p.Name, p.Region, s.Customers.Regions)
		}
		if p.Fault == StoreDown && p.Hold.D() <= s.Lease.D()-s.Margin.D() {
			return fmt.Errorf("phase %s: hold %v does not pass the fence (lease %v - margin %v)", p.Name, p.Hold.D(), s.Lease.D(), s.Margin.D())
		}
		if p.Settle <= 0 {
			return fmt.Errorf("phase %s: settle must be positive", p.Name)
		}
		if p.Fault == RegistryDown && p.Settle.D()/2 < s.BackHome.D() {
			return fmt.Errorf("phase %s: settle %v: the registry comes back half of it after the region is healthy, and that must leave back_home (%v) to see its caller home while the registry is down",
				p.Name, p.Settle.D(), s.BackHome.D())
		}
	}
	return nil
}

// Resolve returns the phases with every "random" region drawn from seed among regions (sorted
// names; a public-id-* fault's among the customers' regions), so one seed replays the same game
// day.
func (s *Scenario) Resolve(seed uint64, regions []string) ([]Phase, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var out []Phase
	for _, p := range s.Phases {
		if p.Region == "random" && p.Fault.customer() {
			p.Region = s.Customers.Regions[rng.IntN(len(s.Customers.Regions))]
		} else if p.Region == "random" {
			p.Region = regions[rng.IntN(len(regions))]
		} else if p.Region != "" && !slices.Contains(regions, p.Region) {
			return nil, fmt.Errorf("gameday: phase %s: region %s is not in the topology (%v)", p.Name, p.Region, regions)
		}
		out = append(out, p)
	}
	return out, nil
}

// PlanText is the phases as a drill runs them: in order, each with its fault, region (drawn),
// peer and durations, for an operator to follow against staging (runbooks/region-down.md).
func PlanText(sc *Scenario, seed uint64, phases []Phase, tp interface{ PeerOf(string) string }) string {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %q, seed %d\n", sc.Name, seed)
	at := time.Duration(0)
	for i, p := range phases {
		fmt.Fprintf(&b, "%d. at +%v %s: %s", i+1, at, p.Name, p.Fault)
		switch {
		case p.Fault == Rolling:
			fmt.Fprintf(&b, " %s (its callers stay on it)", p.Region)
		case p.Fault == RegistryDown:
			fmt.Fprintf(&b, " %s (the registry stopped; the region's generators stopped and, after %v, started again while the registry is down; its callers move to %s and back; the registry back %v after they are healthy)",
				p.Region, p.Hold.D(), tp.PeerOf(p.Region), p.Settle.D()/2)
		case p.Fault == PublicIDLost:
			fmt.Fprintf(&b, " %s (its public-ID processes and store killed, the store's data gone; back empty, filled from the others before it takes customers)", p.Region)
		case p.Fault == PublicIDFreeze:
			fmt.Fprintf(&b, " %s (its public-ID store frozen)", p.Region)
		case p.Fault == PublicIDPartition:
			fmt.Fprintf(&b, " %s (its public-ID processes and %s's cut from each other's stores)", p.Region, tp.PeerOf(p.Region))
		case p.Region != "":
			fmt.Fprintf(&b, " %s (its callers move to %s)", p.Region, tp.PeerOf(p.Region))
		}
		if p.Hold > 0 && p.Fault != RegistryDown {
			fmt.Fprintf(&b, ", held %v, then restored", p.Hold.D())
		}
		fmt.Fprintf(&b, ", settle %v\n", p.Settle.D())
		at += p.Hold.D() + p.Settle.D()
	}
	return b.String()
}
