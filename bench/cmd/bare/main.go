// Command bare is the baseline of the HTTP benchmarks: a bare net/http handler that returns a
// fixed JSON body the size of POST /v1/ids's answer.
//
// By default (-skeleton services) it runs on the services' own server (libs/svc/serve: Main's
// GC target, Serve's timeouts, HTTP/1.1 and h2c, HTTP/2 requests on the grown-stacks pool), so
// that a comparison with a service measures what the service's handlers add. -without leaves
// some of those settings off, one at a time, to measure what each costs (bench/skeleton.sh):
//
//	timeouts  Serve's ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout
//	h2c       HTTP/2 in plaintext (HTTP/1.1 only)
//	h2c-pool  the grown-stacks pool (each HTTP/2 request on its own goroutine)
//	gc        the GC target and memory limit (Go's defaults: GOGC=100, no limit)
//
// -skeleton default is the standard library's server instead: http.Server{Handler: mux} and
// srv.Serve, Go's default GC, with h2c enabled (Protocols HTTP/1.1 and unencrypted HTTP/2) only
// so that the h2c cases have a baseline too; enabling it costs an HTTP/1.1 request nothing
// measurable (bench/README.md, "The skeleton's own cost").
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"

	"github.com/idgen/idgen/libs/svc/serve"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:7100", "address")
	skeleton := flag.String("skeleton", "services", "services (libs/svc/serve) or default (net/http's own http.Server, h2c enabled)")
	without := flag.String("without", "", "with -skeleton services: a comma-separated list of settings to leave off: timeouts, h2c, h2c-pool, gc")
	flag.Parse()
	body := []byte(`{"id":"120460138153815040"}` + "\n")
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	var wo serve.Without
	noGC := false
	for _, s := range strings.Split(*without, ",") {
		switch s {
		case "":
		case "timeouts":
			wo.Timeouts = true
		case "h2c":
			wo.H2C = true
		case "h2c-pool":
			wo.Pool = true
		case "gc":
			noGC = true
		default:
			fail(fmt.Errorf("-without: unknown setting %q (timeouts, h2c, h2c-pool, gc)", s))
		}
	}
	switch *skeleton {
	case "default":
		if *without != "" {
			fail(fmt.Errorf("-without is for -skeleton services"))
		}
		l, err := net.Listen("tcp", *addr)
		if err != nil {
			fail(err)
		}
		srv := &http.Server{Handler: mux, Protocols: new(http.Protocols)}
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetUnencryptedHTTP2(true)
		fail(srv.Serve(l))
	case "services":
		serve.Main("bare", nil, "warn", func(ctx context.Context, log *slog.Logger) error {
			if noGC {
				// Undo Main's SetGC: Go's defaults (GOGC's and GOMEMLIMIT's still apply).
				if os.Getenv("GOGC") == "" {
					debug.SetGCPercent(100)
				}
				if os.Getenv("GOMEMLIMIT") == "" {
					debug.SetMemoryLimit(math.MaxInt64)
				}
			}
			l, err := net.Listen("tcp", *addr)
			if err != nil {
				return err
			}
			return serve.ServeWithout(ctx, l, mux, nil, serve.Shutdown{}, log, wo)
		})
	default:
		fail(fmt.Errorf("-skeleton: services or default, not %q", *skeleton))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bare:", err)
	os.Exit(2)
}
