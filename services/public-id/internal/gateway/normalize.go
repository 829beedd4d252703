package gateway

import "github.com/idgen/idgen/services/public-id/internal/scan"

// Normalize returns text in the form the scanner reads besides the text itself (scan.Normalize:
// percent-escapes and HTML character references decoded, NFKC, invisible characters removed,
// Unicode digits and spaces as ASCII). changed says whether the result differs from text.
func Normalize(text []byte) (out []byte, changed bool) { return scan.Normalize(text) }
