package redismap

// ForceWaitAOF makes s send WAITAOF whatever the server's version, so that tests on a server
// without it can see where the command goes.
func ForceWaitAOF(s *Store) { s.waitAOF = true }

// Judge is judge: whether a node is volatile, from what INFO and CONFIG GET answered.
var Judge = judge
