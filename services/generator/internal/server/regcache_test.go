package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore/region"
)

// TestRegionsCopy: the copy is written whole (no temporary file left beside it) and read back;
// a start refuses one from another registry, an unreadable one, and one past its age.
func TestRegionsCopy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "regions.json")
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for i := range 2 { // a first write, then one replacing it
		if err := writeCopy(path, regionsCopy{Registry: "http://r", ReadAt: at.Add(time.Duration(i) * time.Hour), Regions: region.Defaults()}); err != nil {
			t.Fatal(err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Fatalf("the copy's folder holds %v, want regions.json alone", ents)
	}
	c, err := readCopy(path, "http://r", 7*24*time.Hour, at.Add(48*time.Hour))
	if err != nil || !c.ReadAt.Equal(at.Add(time.Hour)) || len(c.Regions) != 5 {
		t.Fatalf("readCopy = %+v, %v", c, err)
	}
	garbled := filepath.Join(dir, "garbled.json")
	if err := os.WriteFile(garbled, []byte(`{"regions": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path, registry string
		now            time.Time
		want           string
	}{
		{path, "http://other", at, "was read from registry http://r, not from --registry http://other"},
		{path, "http://r", at.Add(8 * 24 * time.Hour), "older than --registry-cache-max-age 168h0m0s"},
		{garbled, "http://r", at, "is not readable"},
		{filepath.Join(dir, "none.json"), "http://r", at, "no copy of the regions at " + filepath.Join(dir, "none.json")},
	} {
		if _, err := readCopy(tt.path, tt.registry, 7*24*time.Hour, tt.now); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("readCopy(%s, %s) = %v, want an error containing %q", tt.path, tt.registry, err, tt.want)
		}
	}
}
