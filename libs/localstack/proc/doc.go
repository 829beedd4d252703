// Package proc builds Go programs and runs them as real processes, for tests and tools that need a
// server as its users see it: a binary with flags, a log, a health check and signals.
//
// Build compiles each main package once per process and keeps the binary in a cache folder shared
// by every process of the machine's user (IDGEN_PROC_CACHE, or idgen-proc-UID under the system's
// temporary folder). A lock file per binary serialises the builders, and go build itself checks the
// binary against the sources: the test binaries of one go test run link a program once, and a
// later run relinks it only when something it is built from changed. The binary for one package
// and set of build tags lives at one path, so a program that is running keeps running while a
// later change rebuilds it (go build replaces the file, it does not write into it).
//
// Start runs a binary as described by a Spec: arguments, environment, working folder, where its
// output goes and how to tell it is healthy. The returned Proc signals it (Signal, Stop, Kill),
// waits for it (Wait, WaitHealthy) and reads the end of its output (Tail) for failure messages.
// On Linux the child is started with Pdeathsig SIGKILL: it dies with the thread of the parent that
// started it, so a test binary killed by a timeout leaves no servers behind.
//
// StartT and BuildT are the adapters for tests: the test fails when the binary does not build,
// start or become healthy, the process is killed when the test ends, and the end of its log is
// printed when the test failed.
//
// The package is for Unix systems.
package proc
