package gateway

// DetectorFind exposes the detector's scan to the tests.
func DetectorFind(d Detector, text string) string { return d.scanner().find([]byte(text)) }

// DetectorAll returns every internal-ID-looking value the detector reads in text.
func DetectorAll(d Detector, text string) []int64 { return d.scanner().values([]byte(text)) }
