package server

import "time"

// SetNamesRefresh shortens how often region names are read again, for tests.
func SetNamesRefresh(d time.Duration) { namesRefresh = d }
