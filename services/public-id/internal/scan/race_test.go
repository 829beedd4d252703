//go:build race

package scan_test

// raceEnabled: the race detector slows the scan tenfold, which the measuring tests skip.
const raceEnabled = true
