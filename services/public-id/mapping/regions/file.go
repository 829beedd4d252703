package regions

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/idgen/idgen/libs/idcore"
)

// File is the regions file (--store regions:FILE): the regions of the public-ID stores, as the
// topology module lays them out, and which of them this process runs in. Terraform writes it on
// every host; the local stack and the tests write it from the same plan.
//
//	{"region": "eu-west-1", "copies": 2, "schedule": "v2",
//	 "regions": [{"name": "us-east-1", "number": 0, "peer": "us-west-2",
//	              "endpoint": "https://dynamodb.us-east-1.amazonaws.com", "table": "idgen-public-ids"}, …]}
type File struct {
	// Region is the region this process runs in; it must be one of Regions.
	Region string `json:"region"`
	// Copies is how many regions must hold a mapping before a publish is acknowledged: 2 (the
	// default when 0), or 1 only when an operator says so (exported as
	// idgen_publicid_copies_required, which alerts below 2).
	Copies int `json:"copies,omitempty"`
	// Schedule names the generators' layout schedule ("v2", the default, or "v1-v2"): it says
	// which internal IDs carry a region number, the owner of their mappings.
	Schedule string `json:"schedule,omitempty"`
	// Regions are every region of the platform, each with its registry number, its failover
	// peer and its store of record.
	Regions []FileRegion `json:"regions"`
}

// FileRegion is one region of the file.
type FileRegion struct {
	Name   string `json:"name"`
	Number int    `json:"number"`
	Peer   string `json:"peer"`
	// Endpoint is the region's DynamoDB endpoint URL (https://dynamodb.REGION.amazonaws.com in
	// production, a local server's URL in the local stack and the tests).
	Endpoint string `json:"endpoint"`
	// Table is the region's table (dynamomap.DefaultTable when empty).
	Table string `json:"table,omitempty"`
	// Absent marks a region of the topology whose table does not exist yet (its Terraform root
	// not applied): it is listed, so that every peer is, but never asked, never a copy's home and
	// never counted as a region that did not answer. Once it exists, a new file without the mark
	// and a restart take it in.
	Absent bool `json:"absent,omitempty"`
}

// ReadFile reads and checks a regions file.
func ReadFile(path string) (File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("regions file: %w", err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return File{}, fmt.Errorf("regions file %s: %w", path, err)
	}
	if err := f.Check(); err != nil {
		return File{}, fmt.Errorf("regions file %s: %w", path, err)
	}
	return f, nil
}

// WriteFile writes f to path (for the local stack and the tests).
func (f File) WriteFile(path string) error {
	if err := f.Check(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Check validates the file: at least two regions (one for a single-copy store), unique names
// and numbers, every peer a region of the file and not the region itself, Region one of them.
func (f File) Check() error {
	if f.Copies < 0 || f.Copies > 2 {
		return fmt.Errorf("copies %d: want 2 (the default) or 1", f.Copies)
	}
	if _, err := idcore.ScheduleByName(f.schedule()); err != nil {
		return err
	}
	if len(f.Regions) == 0 {
		return errors.New("no regions")
	}
	if len(f.Regions) < f.copies() {
		return fmt.Errorf("%d regions cannot hold %d copies", len(f.Regions), f.copies())
	}
	names := map[string]bool{}
	numbers := map[int]string{}
	for _, r := range f.Regions {
		if r.Name == "" {
			return errors.New("a region without a name")
		}
		if names[r.Name] {
			return fmt.Errorf("region %s is listed twice", r.Name)
		}
		names[r.Name] = true
		if r.Number < 0 {
			return fmt.Errorf("region %s: number %d: want the registry's number, 0 or more", r.Name, r.Number)
		}
		if other, dup := numbers[r.Number]; dup {
			return fmt.Errorf("regions %s and %s have the same number %d", other, r.Name, r.Number)
		}
		numbers[r.Number] = r.Name
		if r.Endpoint == "" {
			return fmt.Errorf("region %s: no endpoint", r.Name)
		}
	}
	for _, r := range f.Regions {
		if len(f.Regions) > 1 && (r.Peer == r.Name || !names[r.Peer]) {
			return fmt.Errorf("region %s: peer %q is not another region of the file", r.Name, r.Peer)
		}
	}
	if !names[f.Region] {
		return fmt.Errorf("region %q is not one of the file's regions", f.Region)
	}
	if r, _ := f.region(f.Region); r.Absent {
		return fmt.Errorf("region %s is this process's region and cannot be absent", f.Region)
	}
	return nil
}

func (f File) copies() int {
	if f.Copies == 0 {
		return 2
	}
	return f.Copies
}

func (f File) schedule() string {
	if f.Schedule == "" {
		return "v2"
	}
	return f.Schedule
}

// region returns the named region of the file.
func (f File) region(name string) (FileRegion, bool) {
	for _, r := range f.Regions {
		if r.Name == name {
			return r, true
		}
	}
	return FileRegion{}, false
}
