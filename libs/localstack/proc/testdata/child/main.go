// Command child is the program the proc package's tests run: it prints what it is asked to, serves
// /healthz once it is healthy, reports the signals it gets, and exits when told.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// tagged is set by tagged.go, built with the proctest tag only.
var tagged = false

func main() {
	lines := flag.Int("lines", 0, "print this many numbered lines at start")
	listen := flag.String("listen", "", "serve /healthz on this address")
	healthyAfter := flag.Duration("healthy-after", 0, "answer /healthz 503 until this long after start")
	exit := flag.Int("exit", -1, "exit with this status after printing (-1: run until signalled)")
	ignoreTerm := flag.Bool("ignore-term", false, "do not exit on SIGTERM")
	env := flag.String("env", "", "print the value of this environment variable")
	flag.Parse()

	fmt.Printf("started tagged=%v\n", tagged)
	if wd, err := os.Getwd(); err == nil {
		fmt.Printf("cwd %s\n", wd)
	}
	if *env != "" {
		fmt.Printf("env %s=%s\n", *env, os.Getenv(*env))
	}
	for i := 1; i <= *lines; i++ {
		fmt.Printf("line %d\n", i)
	}
	if *exit >= 0 {
		fmt.Fprintf(os.Stderr, "exiting %d\n", *exit)
		os.Exit(*exit)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	if *listen != "" {
		start := time.Now()
		l, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if time.Since(start) < *healthyAfter {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
	}
	for sig := range sigs {
		fmt.Printf("got %v\n", sig)
		if sig == syscall.SIGTERM && !*ignoreTerm {
			fmt.Println("terminating")
			os.Exit(0)
		}
	}
}
