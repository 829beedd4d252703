package server_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
)

// TestOneValidation: the REST and Connect faces refuse the same bad bodies, by field name, and
// Connect's JSON uses the REST API's field names with zero values present.
func TestOneValidation(t *testing.T) {
	r := start(t, baseConfig(t))
	r.waitReady(t)
	// Labelled counters exist at zero from the first scrape.
	if n := testenv.Metric(t, r.url+"/metrics", "idgen_server_quota_rejections_total", testenv.Labels{"caller": "dev", "region": "us-east-1"}); n != 0 {
		t.Errorf("quota rejections of the known caller before any request: %v, want 0", n)
	}
	connect := func(proc, body string) (int, string) {
		t.Helper()
		code, _, out := doJSON(t, r.url+"/idgen.v1.IdService/"+proc, body)
		return code, out
	}
	for _, tt := range []struct {
		name, rest, restBody, proc, connectBody, want string
	}{
		{"unknown field", "/v1/ids:batch", `{"cnt": 3}`, "GenerateBatch", `{"cnt": 3}`, `unknown field \"cnt\"`},
		{"other case", "/v1/ids:batch", `{"COUNT": 2}`, "GenerateBatch", `{"COUNT": 2}`, `unknown field \"COUNT\"`},
	} {
		code, _, body := testenv.Do(t, "POST", r.url+tt.rest, "", tt.restBody)
		if code != 400 || !strings.Contains(body, tt.want) {
			t.Errorf("%s over REST: %d %s, want 400 with %s", tt.name, code, body, tt.want)
		}
		code, body = connect(tt.proc, tt.connectBody)
		if code != 400 || !strings.Contains(body, "invalid_argument") || !strings.Contains(strings.ReplaceAll(body, `\"`, `"`), strings.ReplaceAll(tt.want, `\"`, `"`)) {
			t.Errorf("%s over Connect: %d %s, want 400 invalid_argument with %s", tt.name, code, body, tt.want)
		}
	}
	if code, body := connect("Decode", `{}`); code != 400 || !strings.Contains(body, `\"id\" is missing`) {
		t.Errorf("Decode {} over Connect: %d %s", code, body)
	}
	// The same decode, one shape: proto field names and zero values present on Connect too.
	_, _, gen := testenv.Do(t, "POST", r.url+"/v1/ids", "", "{}")
	id := strings.Split(strings.Split(gen, `"id":"`)[1], `"`)[0]
	code, body := connect("Decode", `{"id": "`+id+`"}`)
	for _, field := range []string{`"created_at"`, `"region_number":0`, `"machine"`, `"sequence"`} {
		if code != 200 || !strings.Contains(strings.ReplaceAll(body, " ", ""), field) {
			t.Errorf("Connect Decode: %d %s, want %s", code, body, field)
		}
	}
	// One vocabulary for the code label: REST answers are counted by Connect code names too.
	_, _, m := testenv.Do(t, "GET", r.url+"/metrics", "", "")
	rest := grep(m, `protocol="rest"`)
	if !strings.Contains(rest, `code="ok"`) || !strings.Contains(rest, `code="invalid_argument"`) || regexp.MustCompile(`code="[0-9]`).MatchString(rest) {
		t.Errorf("REST requests counted with another vocabulary:\n%s", rest)
	}
	// Unknown procedures over Connect: 404 with Connect's unimplemented code.
	if code, body := connect("Nope", `{}`); code != 404 || !strings.Contains(body, `"unimplemented"`) {
		t.Errorf("an unknown procedure over Connect: %d %s", code, body)
	}
}

// doJSON posts a Connect unary JSON request.
func doJSON(t *testing.T, url, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}
