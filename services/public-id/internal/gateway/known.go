package gateway

import "github.com/idgen/idgen/services/public-id/internal/scan"

// Known is a set of internal IDs that no response may show in any spelling of the scanner's
// table, found anywhere, even inside a longer run and outside the detector's window: the scan
// package's Known. The zero value is an empty set.
type Known struct{ k scan.Known }

// Add adds an internal ID.
func (k *Known) Add(id int64) { k.k.Add(id) }

// find returns the offset of the first known ID in text as it is, or -1.
func (k *Known) find(text []byte) int {
	if k == nil {
		return -1
	}
	return k.k.Find(text)
}

// contains tells whether text, or its normal form, shows a known ID.
func (k *Known) contains(text []byte) bool { return k != nil && k.k.Contains(text) }
