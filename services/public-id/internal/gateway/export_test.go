package gateway

import (
	"net/url"

	"github.com/idgen/idgen/libs/routes"
)

// DetectorFind exposes the detector's scan to the tests.
func DetectorFind(d Detector, text string) string { return d.scanner().Find([]byte(text)) }

// DetectorAll returns every internal-ID-looking value the detector reads in text.
func DetectorAll(d Detector, text string) []int64 { return d.scanner().Values([]byte(text)) }

// DetectorWindow returns the smallest and largest value the detector takes for an internal ID.
func DetectorWindow(d Detector) (lo, hi int64) { return d.window() }

// KnownContains tells whether text, or its normal form, shows an ID of k.
func KnownContains(k *Known, text string) bool { return k.Contains([]byte(text)) }

// AppendQuoted is Fill's quoting of a public ID.
func AppendQuoted(dst []byte, s string) []byte { return appendQuoted(dst, s) }

// RouteTarget is the upstream URL of route r for internal ID id and the encoded query.
func RouteTarget(r *routes.Route, id int64, query string) (*url.URL, error) {
	return r.Target(id, query)
}
