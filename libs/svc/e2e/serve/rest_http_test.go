package serve_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/testenv"
)

type answer struct {
	status int
	header http.Header
	body   string
}

func send(t *testing.T, req *http.Request) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

func post(t *testing.T, url, contentType, body string) answer {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return send(t, req)
}

func errorBody(t *testing.T, a answer) apierr.Body {
	t.Helper()
	var fields map[string]any
	var b apierr.Body
	if json.Unmarshal([]byte(a.body), &fields) != nil || len(fields) != 2 || json.Unmarshal([]byte(a.body), &b) != nil {
		t.Fatalf("%d %s: want exactly error and reason", a.status, a.body)
	}
	return b
}

// TestRESTRefusesBodiesThatAreNotJSON: a POST sent as anything but JSON gets 415
// (unsupported_media_type, naming application/json, and Accept-Post) and its handler never runs, whether it reads
// a body or not: text/plain, form and multipart bodies are the ones a page of any origin can make
// a browser send without a preflight. JSON, in UTF-8 when a charset is named, and a POST without
// a Content-Type (curl -X POST) are served.
func TestRESTRefusesBodiesThatAreNotJSON(t *testing.T) {
	base := "http://" + serveAPI(t, serve.Browsers{})
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	_ = mw.WriteField("count", "1")
	_ = mw.Close()
	for _, tt := range []struct {
		contentType, body string
	}{
		{"text/plain", `{"count":1}`},
		{"text/plain;charset=UTF-8", `{"count":1}`},
		{"application/x-www-form-urlencoded", url.Values{"count": {"1"}}.Encode()},
		{mw.FormDataContentType(), form.String()},
		{"application/xml", `<count>1</count>`},
		{"application/json; charset=iso-8859-1", `{"count":1}`},
		{"application/jsonx", `{"count":1}`},
		{"application/json, text/plain", `{"count":1}`},
	} {
		for _, path := range []string{"/things", "/poke"} {
			before := served.Load()
			a := post(t, base+path, tt.contentType, tt.body)
			b := errorBody(t, a)
			if a.status != http.StatusUnsupportedMediaType || b.Reason != "unsupported_media_type" || !strings.Contains(b.Error, "application/json") ||
				a.header.Get("Accept-Post") != "application/json" {
				t.Errorf("POST %s as %q: %d %s, want 415 unsupported_media_type naming application/json", path, tt.contentType, a.status, a.body)
			}
			if served.Load() != before {
				t.Errorf("POST %s as %q: the handler ran", path, tt.contentType)
			}
		}
	}
	for _, ct := range []string{"", "application/json", "application/json; charset=utf-8", "Application/JSON; Charset=UTF-8"} {
		if a := post(t, base+"/things", ct, `{"count":1}`); a.status != 200 || a.body != "{\"count\":1}\n" {
			t.Errorf("POST /things as %q: %d %s, want 200", ct, a.status, a.body)
		}
	}
	if a := post(t, base+"/poke", "", ""); a.status != 200 {
		t.Errorf("POST /poke without a body or Content-Type: %d %s", a.status, a.body)
	}
	// Counted as the caller's mistake, under the route.
	if n := testenv.Metric(t, base+"/metrics", "idgen_server_requests_total", testenv.Labels{"code": "invalid_argument", "protocol": "rest", "route": "/things"}); n != 8 {
		t.Errorf("415s counted as invalid_argument on /things: %v, want 8", n)
	}
}

// TestRESTBodyIsOneJSONObject: a body is one JSON object and nothing else. null (which decodes
// into a struct as nothing at all), another kind of value, and bytes after the object are 400.
func TestRESTBodyIsOneJSONObject(t *testing.T) {
	base := "http://" + serveAPI(t, serve.Browsers{})
	for _, tt := range []struct{ body, want string }{
		{`null`, "must be a JSON object, not null"},
		{` null `, "must be a JSON object, not null"},
		{`[]`, "must be a JSON object, not an array"},
		{`5`, "must be a JSON object, not a number"},
		{`"count"`, "must be a JSON object, not a string"},
		{`true`, "must be a JSON object, not a boolean"},
		{"{\"count\":1}\x00", "more than its JSON object (at byte 11)"},
		{"{\"count\":1}\n\x00", "more than its JSON object (at byte 12)"},
		{`{"count":1}x`, "more than its JSON object"},
		{`{"count":1}{"count":2}`, "more than one JSON value"},
		{`{"count":1} null`, "more than one JSON value"},
	} {
		a := post(t, base+"/things", "application/json", tt.body)
		if b := errorBody(t, a); a.status != 400 || b.Reason != "bad_request" || !strings.Contains(b.Error, tt.want) {
			t.Errorf("body %q: %d %s, want 400 saying %q", tt.body, a.status, a.body, tt.want)
		}
	}
	for _, body := range []string{`{"count":1}`, " \t\r\n{\"count\":1} \t\r\n", `{}`} {
		if a := post(t, base+"/things", "application/json", body); a.status != 200 {
			t.Errorf("body %q: %d %s, want 200", body, a.status, a.body)
		}
	}
}

// TestRESTHeadAsGet: HEAD is answered wherever GET is, with GET's status and headers (its own
// and Content-Type, Content-Length) and no body; a 405 names HEAD among the methods allowed.
func TestRESTHeadAsGet(t *testing.T) {
	base := "http://" + serveAPI(t, serve.Browsers{})
	for _, path := range []string{"/things/7", "/nowhere", "/poke"} {
		get, _ := http.NewRequest("GET", base+path, nil)
		head, _ := http.NewRequest("HEAD", base+path, nil)
		g, h := send(t, get), send(t, head)
		if h.status != g.status || h.body != "" {
			t.Errorf("HEAD %s: %d with %d bytes; GET: %d", path, h.status, len(h.body), g.status)
		}
		for _, k := range []string{"Content-Type", "Content-Length", "X-Thing", "Allow"} {
			if h.header.Get(k) != g.header.Get(k) {
				t.Errorf("HEAD %s: %s %q, GET's %q", path, k, h.header.Get(k), g.header.Get(k))
			}
		}
		if path == "/things/7" && (h.status != 200 || h.header.Get("X-Thing") != "7" || h.header.Get("Content-Length") != strconv.Itoa(len(g.body))) {
			t.Errorf("HEAD %s: %d %v, want GET's 200 and headers (GET's body is %d bytes)", path, h.status, h.header, len(g.body))
		}
	}
	del, _ := http.NewRequest("DELETE", base+"/things/7", nil)
	if a := send(t, del); a.status != 405 || a.header.Get("Allow") != "OPTIONS, GET, HEAD" {
		t.Errorf("DELETE /things/7: %d, Allow %q", a.status, a.header.Get("Allow"))
	}
}

// TestCORSPreflightHeaderNames: a preflight from a configured origin passes whatever the case
// and order of the header names it asks for (names are case-insensitive; browsers send them
// lower-case and sorted, other clients need not), and still fails for a header not allowed or
// another origin.
func TestCORSPreflightHeaderNames(t *testing.T) {
	const origin = "https://app.example.com"
	base := "http://" + serveAPI(t, serve.Browsers{Origins: []string{origin}})
	preflight := func(origin string, headers ...string) http.Header {
		req, _ := http.NewRequest("OPTIONS", base+"/things", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		for _, h := range headers {
			req.Header.Add("Access-Control-Request-Headers", h)
		}
		return send(t, req).header
	}
	for _, asked := range [][]string{
		{"content-type,x-request-id"}, // as browsers send it
		{"Content-Type, X-Request-Id"},
		{"x-request-id,content-type"},
		{"X-REQUEST-ID ,  content-type"},
		{"Connect-Protocol-Version,Content-Type,Connect-Timeout-Ms"},
		{"content-type, content-type,"},
		{"X-Request-Id", "Content-Type"}, // split by a proxy
	} {
		h := preflight(origin, asked...)
		allowed := strings.ToLower(h.Get("Access-Control-Allow-Headers"))
		if h.Get("Access-Control-Allow-Origin") != origin {
			t.Errorf("preflight asking for %q: not allowed: %v", asked, h)
			continue
		}
		for _, a := range asked {
			for n := range strings.SplitSeq(a, ",") {
				if n = strings.ToLower(strings.TrimSpace(n)); n != "" && !strings.Contains(","+allowed+",", ","+n+",") {
					t.Errorf("preflight asking for %q: Access-Control-Allow-Headers %q lacks %s", asked, allowed, n)
				}
			}
		}
	}
	if h := preflight(origin, "Content-Type, X-Evil"); h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a header not allowed passed: %v", h)
	}
	if h := preflight("https://evil.example.net", "content-type"); h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin passed: %v", h)
	}
}

// TestRESTUnroutedAnswered: what no route takes (echo's own 404 and 405) is answered as every
// error is, refused with 415 first when its body is not JSON (without the 405's Allow), and
// counted: a 404 as route unmatched, a 405 under the path it matched.
func TestRESTUnroutedAnswered(t *testing.T) {
	base := "http://" + serveAPI(t, serve.Browsers{})
	if a := post(t, base+"/nowhere", "text/plain", "x"); a.status != 415 || errorBody(t, a).Reason != "unsupported_media_type" || a.header.Get("Allow") != "" {
		t.Errorf("POST /nowhere as text/plain: %d %v %s, want 415", a.status, a.header, a.body)
	}
	if a := post(t, base+"/things/7", "text/plain", "x"); a.status != 415 || a.header.Get("Allow") != "" {
		t.Errorf("POST /things/7 as text/plain: %d %v %s, want 415 without Allow", a.status, a.header, a.body)
	}
	get, _ := http.NewRequest("GET", base+"/nowhere", nil)
	if a := send(t, get); a.status != 404 || errorBody(t, a).Reason != "not_found" || a.header.Get("X-Request-Id") == "" {
		t.Errorf("GET /nowhere: %d %v %s, want 404 not_found", a.status, a.header, a.body)
	}
	del, _ := http.NewRequest("DELETE", base+"/things/7", nil)
	if a := send(t, del); a.status != 405 || errorBody(t, a).Reason != "method_not_allowed" || a.header.Get("Allow") == "" {
		t.Errorf("DELETE /things/7: %d %v %s, want 405 method_not_allowed", a.status, a.header, a.body)
	}
	// /things is also mounted by exact path (RESTPaths): a method it has no route for, and a path
	// spelt escaped (echo routes by the raw path), are still echo's to answer.
	put, _ := http.NewRequest("PUT", base+"/things", strings.NewReader("{}"))
	if a := send(t, put); a.status != 405 || a.header.Get("Allow") != "OPTIONS, POST" {
		t.Errorf("PUT /things: %d %v %s, want 405 allowing POST", a.status, a.header, a.body)
	}
	if a := post(t, base+"/th%69ngs", "application/json", "{}"); a.status != 404 {
		t.Errorf("POST /th%%69ngs: %d %s, want echo's 404", a.status, a.body)
	}
	m := testenv.Scrape(t, nil, base+"/metrics")
	m.Expect(t,
		testenv.Series{Name: "idgen_server_requests_total", Labels: testenv.Labels{"code": "invalid_argument", "protocol": "rest", "route": "unmatched"}, Value: 1},
		testenv.Series{Name: "idgen_server_requests_total", Labels: testenv.Labels{"code": "not_found", "protocol": "rest", "route": "unmatched"}, Value: 2},
		testenv.Series{Name: "idgen_server_requests_total", Labels: testenv.Labels{"code": "unimplemented", "protocol": "rest", "route": "/things"}, Value: 1},
		testenv.Series{Name: "idgen_server_requests_total", Labels: testenv.Labels{"code": "invalid_argument", "protocol": "rest", "route": "/things/:id"}, Value: 1},
		testenv.Series{Name: "idgen_server_requests_total", Labels: testenv.Labels{"code": "unimplemented", "protocol": "rest", "route": "/things/:id"}, Value: 1},
		testenv.Series{Name: "idgen_server_request_duration_seconds", Labels: testenv.Labels{"route": "unmatched"}, Value: 3},
	)
}

// TestOptionsObserved: an OPTIONS request that is no CORS preflight is answered as echo answers
// it (204, Allow naming the path's methods) and counted and timed under its route, as every
// other request is.
func TestOptionsObserved(t *testing.T) {
	base := "http://" + serveAPI(t, serve.Browsers{})
	for p, allow := range map[string]string{"/things": "OPTIONS, POST", "/things/7": "OPTIONS, GET, HEAD"} {
		req, _ := http.NewRequest("OPTIONS", base+p, nil)
		if a := send(t, req); a.status != http.StatusNoContent || a.header.Get("Allow") != allow {
			t.Fatalf("OPTIONS %s: %d, Allow %q; want 204, %q", p, a.status, a.header.Get("Allow"), allow)
		}
	}
	m := testenv.Scrape(t, nil, base+"/metrics")
	m.Expect(t,
		testenv.Series{Name: "idgen_server_requests_total", Labels: testenv.Labels{"code": "ok", "protocol": "rest", "route": "/things"}, Value: 1},
		testenv.Series{Name: "idgen_server_requests_total", Labels: testenv.Labels{"code": "ok", "protocol": "rest", "route": "/things/:id"}, Value: 1},
		testenv.Series{Name: "idgen_server_request_duration_seconds", Labels: testenv.Labels{"route": "/things"}, Value: 1},
		testenv.Series{Name: "idgen_server_request_duration_seconds", Labels: testenv.Labels{"route": "/things/:id"}, Value: 1},
	)
}

// TestRESTPathsAnswerAsEcho: a route mounted by its own pattern with a {name} segment
// (RESTPaths "/things/{id}", which takes requests past echo's router) answers every request as
// echo alone answers it: the parameter as echo's router reads it (escaped characters, a colon),
// an escaped slash or an empty segment left to echo, the methods it has no route for, HEAD and
// OPTIONS; and each is counted under the same route. A pattern whose route has a static
// sibling (/gadgets/{id} beside /gadgets/new) leaves the sibling's requests to echo.
func TestRESTPathsAnswerAsEcho(t *testing.T) {
	tw := newEchoTwins(t)
	paths := []string{"/things/7", "/things/a%20b", "/things/%37", "/things/a%2Fb", "/things/a:b", "/things/%E2%82%AC",
		"/things/", "/things/7/", "/things/7?x=1", "/things/" + strings.Repeat("x", 300),
		"/things/%7E", "/things/%25", "/things/+", "/things/a;b", "/gadgets/new", "/gadgets/7"}
	for _, method := range []string{"GET", "HEAD", "OPTIONS", "DELETE", "POST"} {
		for _, p := range paths {
			if !tw.compare(t, method, p) {
				t.Fatalf("%s %s: not sent", method, p)
			}
		}
	}
	series := func(base string) map[string]float64 {
		out := map[string]float64{}
		for _, s := range testenv.Scrape(t, nil, base+"/metrics")["idgen_server_requests_total"].GetMetric() {
			k := ""
			for _, l := range s.GetLabel() {
				k += l.GetName() + "=" + l.GetValue() + " "
			}
			out[k] = s.GetCounter().GetValue()
		}
		return out
	}
	d, e := series(tw.direct), series(tw.echoOnly)
	if d["code=ok protocol=rest route=/things/:id "] == 0 {
		t.Fatalf("requests counted %v: none under /things/:id", d)
	}
	if len(d) != len(e) {
		t.Errorf("series counted %v, echo alone %v", d, e)
	}
	for k, v := range e {
		if d[k] != v {
			t.Errorf("requests counted under %s: %v, echo alone %v", k, d[k], v)
		}
	}
	unescaped, _ := http.NewRequest("GET", tw.direct+"/things/a%20b", nil)
	if a := send(t, unescaped); a.header.Get("X-Thing") != "a b" {
		t.Errorf("GET /things/a%%20b: X-Thing %q, want the parameter unescaped, %q", a.header.Get("X-Thing"), "a b")
	}
}

// FuzzRESTPaths: any path under /things/ and /gadgets/ gets the same answer from a route
// mounted by its own pattern as from echo alone (echoTwins.compare).
func FuzzRESTPaths(f *testing.F) {
	for _, seed := range []string{"7", "a%20b", "a%2Fb", "%E2%82%AC", "", "7/", "a:b", "%25", "+", "..", "%2e%2e", "new", "x?y=1"} {
		f.Add("GET", "things", seed)
		f.Add("OPTIONS", "gadgets", seed)
	}
	tw := newEchoTwins(f)
	f.Fuzz(func(t *testing.T, method, root, rest string) {
		switch method {
		case "GET", "HEAD", "OPTIONS", "POST", "DELETE":
		default:
			t.Skip()
		}
		if root != "things" && root != "gadgets" {
			t.Skip()
		}
		if strings.ContainsFunc(rest, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '?' || r == '#' }) {
			t.Skip() // a request line the server refuses with 400, closing the connection, or a query
		}
		if !tw.compare(t, method, "/"+root+"/"+rest) {
			t.Skip() // a value net/http's client or server refuses, for both alike
		}
	})
}

// echoTwins are two serveAPI servers of the same REST API: direct mounts its routes by their own
// patterns (RESTPaths), echoOnly leaves every request to echo. Neither's redirects are followed.
type echoTwins struct {
	direct, echoOnly string
	client           *http.Client
}

func newEchoTwins(t testing.TB) echoTwins {
	return echoTwins{direct: "http://" + serveAPI(t, serve.Browsers{}), echoOnly: "http://" + serveAPIPaths(t, serve.Browsers{}),
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// compare sends method path to both and marks t failed where the answers differ (status, body,
// the parameter echoed in X-Thing, Allow, Content-Type, Content-Length, Location); false when
// the request could not be made or sent.
func (tw echoTwins) compare(t *testing.T, method, path string) bool {
	t.Helper()
	var got [2]answer
	for i, base := range []string{tw.direct, tw.echoOnly} {
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			return false
		}
		resp, err := tw.client.Do(req)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got[i] = answer{resp.StatusCode, resp.Header, string(b)}
	}
	d, e := got[0], got[1]
	if d.status != e.status || d.body != e.body {
		t.Errorf("%s %s: %d %q, echo alone %d %q", method, path, d.status, d.body, e.status, e.body)
	}
	for _, h := range []string{"X-Thing", "Allow", "Content-Type", "Content-Length", "Location"} {
		if d.header.Get(h) != e.header.Get(h) {
			t.Errorf("%s %s: %s %q, echo alone %q", method, path, h, d.header.Get(h), e.header.Get(h))
		}
	}
	return true
}
