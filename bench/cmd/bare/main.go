// Command bare is the baseline of the HTTP benchmarks: a bare net/http handler that returns a
// fixed JSON body the size of POST /v1/ids's answer.
package main

import (
	"flag"
	"log"
	"net/http"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:7100", "address")
	flag.Parse()
	body := []byte(`{"id":"120460138153815040","id_num":120460138153815040}` + "\n")
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	srv := &http.Server{Addr: *addr, Handler: mux, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	log.Fatal(srv.ListenAndServe())
}
