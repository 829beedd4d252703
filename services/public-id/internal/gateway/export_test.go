package gateway

// DetectorFind exposes the detector's scan to the tests.
func DetectorFind(d Detector, text string) string { return d.scanner().find([]byte(text)) }

// DetectorAll returns every internal-ID-looking run of text (decimal or hexadecimal), parsed.
func DetectorAll(d Detector, text string) []int64 {
	s := d.scanner()
	var out []int64
	b := []byte(text)
	for i := 0; i < len(b); {
		if !isHex(b[i]) {
			i++
			continue
		}
		j, letters := i, false
		for j < len(b) && isHex(b[j]) {
			letters = letters || b[j] > '9'
			j++
		}
		if v, ok := s.value(b[i:j], letters); ok {
			out = append(out, v)
		}
		i = j
	}
	return out
}
