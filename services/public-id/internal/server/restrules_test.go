package server_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/testenv"
)

// TestPublishOnlyFromJSON: a publish sent as text/plain or a form gets 415 and a body of null or
// with bytes after its object 400; as JSON, or without a Content-Type, it is served. HEAD answers
// wherever GET does, with GET's status and headers.
func TestPublishOnlyFromJSON(t *testing.T) {
	base := start(t, "sqlite:"+filepath.Join(t.TempDir(), "m.db"))
	const body = `{"internal_id": "683244571854022659"}`
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		code, _, b := testenv.Do(t, "POST", base+"/v1/public-ids", ct, body)
		var e map[string]string
		if code != http.StatusUnsupportedMediaType || json.Unmarshal([]byte(b), &e) != nil || len(e) != 2 ||
			e["reason"] != "unsupported_media_type" || !strings.Contains(e["error"], "application/json") {
			t.Errorf("a publish as %s: %d %s, want 415 unsupported_media_type naming application/json", ct, code, b)
		}
	}
	for _, bad := range []string{`null`, body + "\x00", body + "x"} {
		if code, _, b := testenv.Do(t, "POST", base+"/v1/public-ids", "application/json", bad); code != 400 || !strings.Contains(b, "bad_request") {
			t.Errorf("a publish of %q: %d %s, want 400", bad, code, b)
		}
	}
	code, _, b := testenv.Do(t, "POST", base+"/v1/public-ids", "", body)
	var pub struct {
		PublicID string `json:"public_id"`
	}
	if code != 200 || json.Unmarshal([]byte(b), &pub) != nil || pub.PublicID == "" {
		t.Fatalf("a publish without a Content-Type: %d %s", code, b)
	}
	if code, _, b := testenv.Do(t, "POST", base+"/v1/public-ids", "application/json; charset=utf-8", body); code != 200 || !strings.Contains(b, pub.PublicID) {
		t.Errorf("a publish as JSON: %d %s", code, b)
	}
	for _, path := range []string{"/v1/public-ids/" + pub.PublicID, "/v1/public-ids/ord_nope", "/healthz"} {
		gc, gh, _ := testenv.Do(t, "GET", base+path, "", "")
		hc, hh, hb := testenv.Do(t, "HEAD", base+path, "", "")
		if hc != gc || hb != "" || hh.Get("Content-Type") != gh.Get("Content-Type") || hh.Get("Content-Length") != gh.Get("Content-Length") {
			t.Errorf("HEAD %s: %d %v %q; GET: %d %v", path, hc, hh, hb, gc, gh)
		}
	}
}
