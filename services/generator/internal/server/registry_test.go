package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
)

// TestRegistryUnreachableWhileRunning: a registry that stops answering turns /healthz degraded
// (still 200) and the reachable gauge 0 within a read; the generator issues on; once it answers
// again both recover and the copy beside the lease store is rewritten.
func TestRegistryUnreachableWhileRunning(t *testing.T) {
	var down atomic.Bool
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"regions":[{"name":"us-east-1","number":0,"peer":"us-west-2","status":"active"}]}`)
	}))
	defer reg.Close()
	cfg := baseConfig(t)
	cfg.Registry, cfg.RegistryPoll = reg.URL, 50*time.Millisecond
	copyPath := filepath.Join(filepath.Dir(strings.TrimPrefix(cfg.LeaseStore, "sqlite:")), "regions.json")
	r := start(t, cfg)
	r.waitReady(t)
	state := func() (int, string, string) {
		code, _, body := testenv.Do(t, "GET", r.url+"/healthz", "", "")
		gauge := "absent"
		if v, ok := testenv.Scrape(t, nil, r.url+"/metrics").Value("idgen_generator_registry_reachable", nil); ok {
			gauge = strconv.FormatFloat(v, 'g', -1, 64)
		}
		return code, body, gauge
	}
	if code, body, gauge := state(); code != 200 || !strings.Contains(body, `"status":"ok"`) || gauge != "1" {
		t.Fatalf("registry up: %d %s, reachable %s", code, body, gauge)
	}
	down.Store(true)
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		code, body, gauge := state()
		return code == 200 && strings.Contains(body, `"status":"degraded","reason":"registry_unreachable"`) &&
			strings.Contains(body, reg.URL) && strings.Contains(body, copyPath) && gauge == "0", fmt.Sprintf("registry down: %d %s, reachable %s", code, body, gauge)
	})
	if code, _, body := testenv.Do(t, "POST", r.url+"/v1/ids", "", "{}"); code != 200 {
		t.Fatalf("POST /v1/ids with the registry down: %d %s", code, body)
	}
	before, err := os.Stat(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	down.Store(false)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		code, body, gauge := state()
		return code == 200 && strings.Contains(body, `"status":"ok"`) && gauge == "1", fmt.Sprintf("registry back: %d %s, reachable %s", code, body, gauge)
	})
	if after, err := os.Stat(copyPath); err != nil || !after.ModTime().After(before.ModTime()) {
		t.Fatalf("the copy was not rewritten once the registry answered: %v, %v", after, err)
	}
}
