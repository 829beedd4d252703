package idclient_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idclient"
)

// firstRead accepts one connection and returns what its first read held, after answering.
func firstRead(t *testing.T, l net.Listener) <-chan string {
	out := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			out <- ""
			return
		}
		defer c.Close()
		buf := make([]byte, 64<<10)
		n, _ := c.Read(buf)
		first := string(buf[:n])
		// Finish reading the request before answering, however it arrived.
		rest := io.MultiReader(bytes.NewReader(buf[:n]), c)
		req, err := http.ReadRequest(bufio.NewReader(rest))
		if err == nil {
			_, _ = io.Copy(io.Discard, req.Body)
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 27\r\n\r\n{\"id\":\"120460138153815040\"}")
		out <- first
	}()
	return out
}

// A unary Connect call over HTTP/1.1 through OneWrite sends headers and body in one write: the
// server's first read holds the whole request, body included, and the answer is decoded.
func TestOneWriteSendsHeadersAndBodyTogether(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := firstRead(t, l)
	hc := &http.Client{Transport: idclient.OneWrite(&http.Transport{}), Timeout: 5 * time.Second}
	c := idgenv1connect.NewIdServiceClient(hc, "http://"+l.Addr().String(), connect.WithProtoJSON())
	resp, err := c.Generate(context.Background(), connect.NewRequest(&idgenv1.GenerateRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Msg.GetId() != 120460138153815040 {
		t.Fatalf("id = %d", resp.Msg.GetId())
	}
	first := <-got
	if !strings.HasPrefix(first, "POST /idgen.v1.IdService/Generate HTTP/1.1\r\n") || !strings.HasSuffix(first, "\r\n\r\n{}") {
		t.Fatalf("the first read did not hold the whole request:\n%q", first)
	}
}

// Requests without a body, or too large to buffer, pass through unchanged.
func TestOneWritePassesOtherRequests(t *testing.T) {
	var seen []string
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		var b []byte
		if r.Body != nil {
			b, _ = io.ReadAll(r.Body)
		}
		seen = append(seen, r.Method+" "+string(b[:min(len(b), 3)]))
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
	})
	hc := &http.Client{Transport: idclient.OneWrite(base)}
	if _, err := hc.Get("http://example.invalid/"); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 100<<10)
	if _, err := hc.Post("http://example.invalid/", "text/plain", strings.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != "GET " || seen[1] != "POST xxx" {
		t.Fatalf("passed through: %q", seen)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
