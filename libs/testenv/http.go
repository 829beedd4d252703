package testenv

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Do sends one request with http.DefaultClient, its Content-Type contentType when that is not ""
// and header's name, value pairs added, and returns the answer's status, header and body. It
// fails t when no answer came or its body could not be read whole.
func Do(t testing.TB, method, url, contentType, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}
