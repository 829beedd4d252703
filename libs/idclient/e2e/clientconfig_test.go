package idclient_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idclient"
	"github.com/idgen/idgen/libs/testenv"
)

// What `terraform output -json client_config` prints for the topology's defaults (two regions).
const tfOutput = `{"eu-west-1":{"endpoints":["https://idgen.eu-west-1.idgen.internal:443","https://idgen.us-east-1.idgen.internal:443"]},` +
	`"us-east-1":{"endpoints":["https://idgen.us-east-1.idgen.internal:443","https://idgen.us-west-2.idgen.internal:443"]}}`

func TestParseClientConfig(t *testing.T) {
	cc, err := idclient.ParseClientConfig([]byte(tfOutput))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := cc.ConfigFor("eu-west-1", idclient.Config{Batch: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Endpoints, " "); got != "https://idgen.eu-west-1.idgen.internal:443 https://idgen.us-east-1.idgen.internal:443" || cfg.Batch != 10 {
		t.Fatalf("eu-west-1's config: %+v", cfg)
	}
	if got := strings.Join(cc.Regions(), " "); got != "eu-west-1 us-east-1" {
		t.Fatalf("regions %s", got)
	}
	if _, err := cc.ConfigFor("ap-south-1", idclient.Config{}); !errors.Is(err, idclient.ErrNoRegion) || !strings.Contains(err.Error(), "eu-west-1, us-east-1") {
		t.Fatalf("unknown region: %v", err)
	}
	if _, err := cc.ConfigFor("eu-west-1", idclient.Config{Endpoints: []string{"http://127.0.0.1:7002"}}); err == nil || !strings.Contains(err.Error(), "by hand") {
		t.Fatalf("endpoints by hand and from the file: %v", err)
	}

	for _, tt := range []struct{ name, in, want string }{
		{"not JSON", `endpoints`, "want the JSON of `terraform output -json client_config`"},
		{"empty", `{}`, "no regions"},
		{"the whole output, not its value", `{"client_config":{"sensitive":false,"value":{}}}`, "unknown field"},
		{"no peer", `{"eu-west-1":{"endpoints":["https://a:443"]}}`, "region eu-west-1 has 1 endpoints, want 2"},
		{"own peer", `{"eu-west-1":{"endpoints":["https://a:443","https://a:443"]}}`, "region eu-west-1 has its own endpoint https://a:443 as its peer's too"},
		{"not a URL", `{"eu-west-1":{"endpoints":["https://a:443","idgen.us-east-1"]}}`, `region eu-west-1: endpoint "idgen.us-east-1" is not an http(s) URL`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := idclient.ParseClientConfig([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestClientFromClientConfigFile: a caller configured from a written client config file takes
// IDs from its own region, moves to the peer the file names when its region is down, and back.
func TestClientFromClientConfigFile(t *testing.T) {
	local, localURL := serve(t, 2)
	_, peerURL := serve(t, 0)
	path := filepath.Join(t.TempDir(), "client_config.json")
	cc := idclient.ClientConfig{
		"eu-west-1": {Endpoints: []string{localURL, peerURL}},
		"us-east-1": {Endpoints: []string{peerURL, localURL}},
	}
	if err := cc.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("written file: %v %v", fi, err)
	}
	read, err := idclient.ReadClientConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := read.ConfigFor("eu-west-1", idclient.Config{Batch: 50, ProbeEvery: 50 * time.Millisecond, HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	c, err := idclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	region := func() int {
		id, err := c.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		d, _ := c.Decode(id)
		return d.Region
	}
	if r := region(); r != 2 {
		t.Fatalf("first ID from region %d, want its own (2)", r)
	}
	local.setDown(true)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		r := region()
		return r == 0, fmt.Sprintf("with its region down the IDs still come from region %d", r)
	})
	local.setDown(false)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		r := region()
		return r == 2, fmt.Sprintf("its region is up again and the IDs come from region %d", r)
	})

	if err := os.WriteFile(path, []byte(`{"eu-west-1":{"endpoints":["`+localURL+`"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := idclient.ReadClientConfig(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("a file without the peer: %v, want an error naming the file", err)
	}
}
