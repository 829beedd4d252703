package redismap

// ForceWaitAOF makes s send WAITAOF whatever the server's version, so that tests on a server
// without it can see where the command goes.
func ForceWaitAOF(s *Store) { s.waitAOF = true }

// Judge is judge: whether a node is volatile, from what INFO and CONFIG GET answered.
var Judge = judge

// Uncovered makes s publish as it does where nothing is read per write (AcceptVolatile), so that
// a benchmark can set that path beside the covered one on the same server.
func Uncovered(s *Store) { s.covers = false }
