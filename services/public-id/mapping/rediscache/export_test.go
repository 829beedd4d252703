package rediscache

// Wait waits for the write-backs under way.
func Wait(s *Store) { s.bg.Wait() }

// Unpause lets the next call ask Redis again, as if the pause after a failure had passed.
func Unpause(s *Store) { s.pausedUntil.Store(0) }

// Keep writes a mapping to the cache as a found one is, in the background.
func Keep(s *Store, public string, internal int64) { s.keep(public, internal) }
