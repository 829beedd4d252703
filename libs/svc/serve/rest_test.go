package serve

import (
	"slices"
	"testing"
)

// TestMuxPattern: an echo path becomes the ServeMux pattern that matches what echo's route
// matches, or none where a pattern would match more (a trailing slash's subtree, a wildcard name
// ServeMux reads as {name...} or {$}) or cannot say it (a parameter inside a segment, echo's *).
func TestMuxPattern(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/public-ids/:public_id": "/v1/public-ids/{public_id}",
		`/v1/ids\:batch`:            "/v1/ids:batch",
		"/a/:x/b/:y2":               "/a/{x}/b/{y2}",
		"/things":                   "/things",
		"/dir/":                     "",
		"/":                         "",
		"/files/:rest...":           "",
		"/d/:$":                     "",
		"/d/:9lives":                "",
		"/d/:":                      "",
		"/d/a:b":                    "",
		"/d/*":                      "",
		"/d/{x}":                    "",
		"d/:x":                      "",
	} {
		got, _, ok := muxPattern(path)
		if !ok {
			got = ""
		}
		if got != want {
			t.Errorf("muxPattern(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
	if _, params, _ := muxPattern("/a/:x/b/:y2"); !slices.Equal(params, []string{"x", "y2"}) {
		t.Errorf("parameters %q, want [x y2]", params)
	}
}
