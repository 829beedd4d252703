// Command bare is the baseline of the HTTP benchmarks: a bare net/http handler that returns a
// fixed JSON body the size of POST /v1/ids's answer, served by the same http.Server settings as
// the services (libs/svc/serve: timeouts, HTTP/1.1 and h2c) and the same garbage collector
// target, so that the comparison measures what the services' handlers add.
package main

import (
	"context"
	"flag"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/idgen/idgen/libs/svc/serve"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:7100", "address")
	flag.Parse()
	serve.SetGC() // the services' garbage collector target, for a like-for-like baseline
	body := []byte(`{"id":"120460138153815040","id_num":120460138153815040}` + "\n")
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	lg := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := serve.Serve(ctx, l, mux, nil, 0, lg, nil); err != nil {
		log.Fatal(err)
	}
}
