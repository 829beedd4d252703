package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
)

// TestChangesOnlyFromJSON: an add or a retire sent as text/plain or a form (what a page of any
// origin can make an admin's browser send without a preflight) gets 415 and changes nothing; a
// body of null is 400. The same requests as JSON, or a retire without a Content-Type, are served.
func TestChangesOnlyFromJSON(t *testing.T) {
	base := "http://" + start(t, devConfig(t))
	for _, tt := range []struct{ path, contentType, body string }{
		{"/v1/regions", "text/plain", `{"name": "eu-central-1", "peer": "eu-west-1"}`},
		{"/v1/regions", "application/x-www-form-urlencoded", `{"name": "eu-central-1", "peer": "eu-west-1"}`},
		{"/v1/regions/us-west-2:retire", "text/plain", ``},
		{"/v1/regions/us-west-2:retire", "application/x-www-form-urlencoded", ``},
		{"/v1/regions/us-west-2:retire", "multipart/form-data; boundary=x", "--x--\r\n"},
	} {
		code, _, body := testenv.Do(t, "POST", base+tt.path, tt.contentType, tt.body)
		var e map[string]string
		if code != http.StatusUnsupportedMediaType || json.Unmarshal([]byte(body), &e) != nil || len(e) != 2 ||
			e["reason"] != "unsupported_media_type" || !strings.Contains(e["error"], "application/json") {
			t.Errorf("POST %s as %s: %d %s, want 415 unsupported_media_type naming application/json", tt.path, tt.contentType, code, body)
		}
	}
	if code, _, body := testenv.Do(t, "POST", base+"/v1/regions", "application/json", `null`); code != 400 || !strings.Contains(body, "must be a JSON object, not null") {
		t.Errorf("an add with a body of null: %d %s", code, body)
	}
	if _, _, body := testenv.Do(t, "GET", base+"/v1/regions/us-west-2", "", ""); !strings.Contains(body, `"status":"active"`) {
		t.Errorf("us-west-2 changed: %s", body)
	}
	if _, _, body := testenv.Do(t, "GET", base+"/v1/regions/eu-central-1", "", ""); !strings.Contains(body, "not_found") {
		t.Errorf("eu-central-1 was added: %s", body)
	}
	if code, _, body := testenv.Do(t, "POST", base+"/v1/regions", "application/json", `{"name": "eu-central-1", "peer": "eu-west-1"}`); code != 201 {
		t.Errorf("an add as JSON: %d %s", code, body)
	}
	if code, _, body := testenv.Do(t, "POST", base+"/v1/regions/eu-central-1:retire", "", ""); code != 200 || !strings.Contains(body, `"status":"retired"`) {
		t.Errorf("a retire without a body: %d %s", code, body)
	}
}

// TestHeadWhereGet: every GET route answers HEAD with GET's status and headers and no body.
func TestHeadWhereGet(t *testing.T) {
	base := "http://" + start(t, devConfig(t))
	for _, path := range []string{"/v1/regions", "/v1/regions/eu-west-1", "/v1/regions/mars-1", "/v1/layouts", "/v1/audit", "/healthz"} {
		gc, gh, _ := testenv.Do(t, "GET", base+path, "", "")
		hc, hh, hb := testenv.Do(t, "HEAD", base+path, "", "")
		if hc != gc || hb != "" || hh.Get("Content-Type") != gh.Get("Content-Type") || hh.Get("Content-Length") != gh.Get("Content-Length") {
			t.Errorf("HEAD %s: %d %v %q; GET: %d %v", path, hc, hh, hb, gc, gh)
		}
	}
}
