package cli_test

import (
	"context"
	"io"
	"net"
	"os"
	"testing"

	"github.com/idgen/idgen/tools/idgenctl/internal/cli"
)

// hangingServer accepts connections and never answers; it returns its URL.
func hangingServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { l.Close() })
	return "http://" + l.Addr().String()
}

// runWithStdin runs idgenctl with stdin replaced by in.
func runWithStdin(t *testing.T, in *os.File, stdout, stderr io.Writer, args ...string) int {
	t.Helper()
	old := os.Stdin
	os.Stdin = in
	defer func() { os.Stdin = old }()
	return cli.Run(context.Background(), args, stdout, stderr, func(string) string { return "" })
}
