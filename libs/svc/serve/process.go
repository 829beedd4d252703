package serve

import (
	"errors"
	"flag"
	"time"
)

// Process holds the settings every service has, for Main and Serve: the log level and how long
// a graceful shutdown waits for requests in flight.
type Process struct {
	LogLevel string
	Drain    time.Duration
}

// RegisterFlags adds --log-level and --drain (default drain) to fs.
func (p *Process) RegisterFlags(fs *flag.FlagSet, drain time.Duration) {
	fs.StringVar(&p.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&p.Drain, "drain", drain, "how long graceful shutdown waits for requests in flight")
}

// Check refuses a negative drain time (Main checks the log level).
func (p Process) Check() error {
	if p.Drain < 0 {
		return errors.New("--drain is negative")
	}
	return nil
}
