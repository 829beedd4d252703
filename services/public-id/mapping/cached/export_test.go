package cached

// CleanUp runs the cache's pending maintenance (evictions included) now.
func CleanUp(s *Store) { s.c.CleanUp() }
