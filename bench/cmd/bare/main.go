// Command bare is the baseline of the HTTP benchmarks: a bare net/http handler that returns a
// fixed JSON body the size of POST /v1/ids's answer, served by the same http.Server settings as
// the services (libs/svc/serve: timeouts, HTTP/1.1 and h2c) and the same garbage collector
// target, so that the comparison measures what the services' handlers add.
package main

import (
	"context"
	"flag"
	"log/slog"
	"net"
	"net/http"

	"github.com/idgen/idgen/libs/svc/serve"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:7100", "address")
	flag.Parse()
	body := []byte(`{"id":"120460138153815040"}` + "\n")
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	// serve.Main also sets the services' GC target, for a like-for-like baseline.
	serve.Main("bare", nil, "warn", func(ctx context.Context, log *slog.Logger) error {
		l, err := net.Listen("tcp", *addr)
		if err != nil {
			return err
		}
		return serve.Serve(ctx, l, mux, nil, serve.Shutdown{}, log)
	})
}
