package server_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
)

type reply struct {
	status int
	header http.Header
	body   string
}

func send(t *testing.T, method, url, contentType, body string, hdr ...string) reply {
	t.Helper()
	status, header, b := testenv.Do(t, method, url, contentType, body, hdr...)
	return reply{status, header, b}
}

// served is how many IDs the generator has handed to the dev caller.
func (r *running) served(t *testing.T) float64 {
	t.Helper()
	return testenv.Metric(t, r.url+"/metrics", "idgen_server_ids_served_total", testenv.Labels{"caller": "dev", "region": "us-east-1"})
}

// TestRESTIssuesForJSONOnly: a POST for IDs sent as text/plain, a form or multipart gets 415
// (unsupported_media_type, naming application/json) and issues nothing, so a page of any origin
// cannot make a browser spend a caller's quota with a request that needs no CORS preflight.
// JSON, and a POST without a Content-Type (curl -X POST), are served.
func TestRESTIssuesForJSONOnly(t *testing.T) {
	r := start(t, baseConfig(t))
	r.waitReady(t)
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	_ = mw.WriteField("count", "5")
	_ = mw.Close()
	var empty bytes.Buffer
	ew := multipart.NewWriter(&empty)
	_ = ew.Close()
	for _, tt := range []struct{ path, contentType, body string }{
		{"/v1/ids", "text/plain", `{}`},
		{"/v1/ids", "text/plain;charset=UTF-8", ``},
		{"/v1/ids", "application/x-www-form-urlencoded", ``}, // a form with no fields
		{"/v1/ids", "application/x-www-form-urlencoded", `{}`},
		{"/v1/ids", ew.FormDataContentType(), empty.String()},
		{"/v1/ids:batch", "text/plain", `{"count": 5}`},
		{"/v1/ids:batch", "application/x-www-form-urlencoded", `{"count": 5}`},
		{"/v1/ids:batch", "application/x-www-form-urlencoded", `count=5`},
		{"/v1/ids:batch", mw.FormDataContentType(), form.String()},
	} {
		before := r.served(t)
		a := send(t, "POST", r.url+tt.path, tt.contentType, tt.body)
		var e struct{ Error, Reason string }
		if a.status != http.StatusUnsupportedMediaType || json.Unmarshal([]byte(a.body), &e) != nil ||
			e.Reason != "unsupported_media_type" || !strings.Contains(e.Error, "application/json") {
			t.Errorf("POST %s as %s: %d %s, want 415 unsupported_media_type naming application/json", tt.path, tt.contentType, a.status, a.body)
		}
		if after := r.served(t); after != before {
			t.Errorf("POST %s as %s: IDs issued (%v, then %v)", tt.path, tt.contentType, before, after)
		}
	}
	for _, tt := range []struct{ path, contentType, body string }{
		{"/v1/ids", "", ""},
		{"/v1/ids", "", "{}"},
		{"/v1/ids", "application/json", "{}"},
		{"/v1/ids:batch", "", `{"count": 5}`},
		{"/v1/ids:batch", "application/json; charset=utf-8", `{"count": 5}`},
	} {
		if a := send(t, "POST", r.url+tt.path, tt.contentType, tt.body); a.status != 200 {
			t.Errorf("POST %s as %q: %d %s, want 200", tt.path, tt.contentType, a.status, a.body)
		}
	}
}

// TestRESTBodyIsOneJSONObject: null, another kind of value, and anything after the object but
// JSON's own whitespace are 400, and issue nothing.
func TestRESTBodyIsOneJSONObject(t *testing.T) {
	r := start(t, baseConfig(t))
	r.waitReady(t)
	for _, tt := range []struct{ path, body, want string }{
		{"/v1/ids", `null`, "must be a JSON object, not null"},
		{"/v1/ids:batch", `null`, "must be a JSON object, not null"},
		{"/v1/ids", `[]`, "must be a JSON object, not an array"},
		{"/v1/ids:batch", `1000`, "must be a JSON object, not a number"},
		{"/v1/ids", "{}\x00", "more than its JSON object"},
		{"/v1/ids:batch", "{\"count\":1}\x00", "more than its JSON object"},
		{"/v1/ids", "{}\v", "more than its JSON object"},
		{"/v1/ids", "{}\f", "more than its JSON object"},
		{"/v1/ids", "{}\u00a0", "more than its JSON object"},
		{"/v1/ids:batch", "{\"count\":1}\u0085", "more than its JSON object"},
		{"/v1/ids:batch", "\u00a0{\"count\":1}", "not a valid JSON object"},
	} {
		before := r.served(t)
		a := send(t, "POST", r.url+tt.path, "application/json", tt.body)
		var e struct{ Error, Reason string }
		if a.status != 400 || json.Unmarshal([]byte(a.body), &e) != nil || e.Reason != "bad_request" || !strings.Contains(e.Error, tt.want) {
			t.Errorf("POST %s %q: %d %s, want 400 saying %q", tt.path, tt.body, a.status, a.body, tt.want)
		}
		if after := r.served(t); after != before {
			t.Errorf("POST %s %q: IDs issued (%v, then %v)", tt.path, tt.body, before, after)
		}
	}
	if a := send(t, "POST", r.url+"/v1/ids:batch", "application/json", " \r\n\t{\"count\": 2}\r\n"); a.status != 200 {
		t.Errorf("a batch in JSON whitespace: %d %s", a.status, a.body)
	}
}

// TestRESTHeadWhereGet: HEAD on decode and /healthz answers as GET does (status, Content-Type,
// Content-Length), without a body, on the API port and on the health listener, and is counted
// as ok, not as unimplemented.
func TestRESTHeadWhereGet(t *testing.T) {
	r := start(t, baseConfig(t))
	r.waitReady(t)
	health := httptest.NewServer(r.srv.HealthHandler())
	defer health.Close()
	hs := health.URL
	for _, url := range []string{r.url + "/v1/ids/97301141913751557/decode", r.url + "/v1/ids/abc/decode", r.url + "/healthz", hs + "/healthz"} {
		g, h := send(t, "GET", url, "", ""), send(t, "HEAD", url, "", "")
		if h.status != g.status || h.body != "" {
			t.Errorf("HEAD %s: %d with %q; GET: %d", url, h.status, h.body, g.status)
		}
		if h.header.Get("Content-Type") != g.header.Get("Content-Type") || h.header.Get("Content-Length") == "" {
			t.Errorf("HEAD %s: headers %v; GET's %v", url, h.header, g.header)
		}
		// /healthz's body holds the time left to the fence, whose digits may change between
		// the two requests; decode's is the same each time.
		if strings.Contains(url, "/decode") && h.header.Get("Content-Length") != g.header.Get("Content-Length") {
			t.Errorf("HEAD %s: Content-Length %q, GET's %q", url, h.header.Get("Content-Length"), g.header.Get("Content-Length"))
		}
	}
	if h := send(t, "HEAD", r.url+"/v1/ids/97301141913751557/decode", "", ""); h.status != 200 {
		t.Errorf("HEAD decode: %d", h.status)
	}
	if n := testenv.Scrape(t, nil, r.url+"/metrics").Sum("idgen_server_requests_total", testenv.Labels{"route": "/v1/ids/:id/decode", "code": "unimplemented"}); n != 0 {
		t.Errorf("a HEAD of decode counted as unimplemented %v times", n)
	}
}

// TestCORSPreflightAnyCase: a page of a configured origin passes its preflight whatever the
// case and order of the header names it asks for, for REST and Connect alike.
func TestCORSPreflightAnyCase(t *testing.T) {
	const origin = "https://app.example.com"
	cfg := baseConfig(t)
	cfg.Browsers.Origins = []string{origin}
	r := start(t, cfg)
	r.waitReady(t)
	for _, tt := range []struct{ path, headers string }{
		{"/v1/ids:batch", "content-type"},
		{"/v1/ids:batch", "Content-Type"},
		{"/v1/ids:batch", "X-Request-Id, Content-Type"},
		{"/idgen.v1.IdService/GenerateBatch", "connect-protocol-version,content-type"},
		{"/idgen.v1.IdService/GenerateBatch", "Content-Type,Connect-Protocol-Version, Connect-Timeout-Ms"},
	} {
		a := send(t, "OPTIONS", r.url+tt.path, "", "", "Origin", origin, "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", tt.headers)
		if a.status != http.StatusNoContent || a.header.Get("Access-Control-Allow-Origin") != origin || a.header.Get("Access-Control-Allow-Headers") == "" {
			t.Errorf("preflight of %s asking for %q: %d %v", tt.path, tt.headers, a.status, a.header)
		}
	}
	if a := send(t, "OPTIONS", r.url+"/v1/ids:batch", "", "", "Origin", origin, "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "Content-Type, Cookie"); a.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a preflight asking for a header not allowed passed: %v", a.header)
	}
}
