package gateway

import "github.com/idgen/idgen/services/public-id/internal/scan"

// Known is a set of internal IDs that no response may show in any spelling of the scanner's
// table, found anywhere, even inside a longer run and outside the detector's window. The zero
// value is an empty set.
type Known = scan.Known
