package proc_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/idgen/idgen/libs/localstack/proc"
)

// Build a program, start it, wait until it is healthy, and stop it. In a test, proc.BuildT and
// proc.StartT do the same in two lines and fail the test (printing the end of the log) on error.
func Example() {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the program to listen on
	if err != nil {
		log.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	bins, err := proc.Build(ctx, "./testdata/child")
	if err != nil {
		log.Fatal(err)
	}
	p, err := proc.Start(ctx, proc.Spec{
		Bin:       bins[0],
		Args:      []string{"--listen", addr},
		HealthURL: "http://" + addr + "/healthz",
		Grace:     5 * time.Second, // Stop kills it if it has not exited 5 s after SIGTERM
	})
	if err != nil {
		log.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := p.WaitHealthy(wctx); err != nil {
		log.Fatalf("%v\n%s", err, p.Tail(20))
	}
	fmt.Println("healthy")
	if err := p.Stop(); err != nil {
		log.Fatalf("not a graceful stop: %v", err)
	}
	fmt.Print(p.Tail(2))
	// Output:
	// healthy
	// got terminated
	// terminating
}
