package auth_test

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/svc/auth"
)

func TestParseSPIFFE(t *testing.T) {
	tests := []struct {
		uri  string
		name string
		ok   bool
	}{
		{"spiffe://idgen.test/svc/orders", "orders", true},
		{"spiffe://idgen.test/svc/billing-v2", "billing-v2", true},
		{"spiffe://other.test/svc/orders", "", false},
		{"https://idgen.test/svc/orders", "", false},
		{"spiffe://idgen.test/orders", "", false},
		{"spiffe://idgen.test/svc/", "", false},
		{"spiffe://idgen.test/svc/a/b", "", false},
		{"spiffe://idgen.test/svc/Orders", "", false},
		{"spiffe://idgen.test:443/svc/orders", "", false},
		{"spiffe://idgen.test/svc/orders?x=1", "", false},
		{"spiffe://user@idgen.test/svc/orders", "", false},
		{"spiffe://idgen.test/svc/ord%65rs", "", false},
		{"spiffe://idgen.test/svc%2Forders", "", false},
	}
	for _, tt := range tests {
		u, _ := url.Parse(tt.uri)
		id, err := auth.ParseSPIFFE(u, "idgen.test")
		if tt.ok != (err == nil) || id.Name != tt.name {
			t.Errorf("ParseSPIFFE(%s) = %+v, %v", tt.uri, id, err)
		}
		if err != nil && !errors.Is(err, auth.ErrBadIdentity) {
			t.Errorf("error %v is not ErrBadIdentity", err)
		}
	}
}

func TestLoadCallers(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "c.json")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := auth.LoadCallers(write(`{"trust_domain":"idgen.test","callers":[{"name":"orders","ids_per_second":5000},{"name":"small","ids_per_second":10}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := c.Find("orders"); o.Burst != 5000 {
		t.Fatalf("default burst %d, want the rate", o.Burst)
	}
	if s, _ := c.Find("small"); s.Burst != 1000 {
		t.Fatalf("default burst %d, want 1000 so a full batch fits", s.Burst)
	}
	for _, bad := range []string{
		`{"trust_domain":"","callers":[]}`,
		`{"trust_domain":"idgen.test","callers":[{"name":"a"},{"name":"a"}]}`,
		`{"trust_domain":"idgen.test","callers":[{"name":"Bad Name"}]}`,
		`{"trust_domain":"idgen.test","callers":[{"name":"a","ids_per_second":-1}]}`,
		`{"trust_domain":"idgen.test","callers":[],"extra":1}`,
	} {
		if _, err := auth.LoadCallers(write(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestEdgeCheck(t *testing.T) {
	full := auth.Edge{CallersFile: "c.json", CertFile: "s.pem", KeyFile: "s.key", ClientCA: "ca.pem"}
	for _, tt := range []struct {
		name string
		edge auth.Edge
		want string // "" for accepted
	}{
		{"mutual TLS", full, ""},
		{"development", auth.Edge{InsecureDev: true}, ""},
		{"neither", auth.Edge{}, "mutual TLS needs"},
		{"TLS without callers", auth.Edge{CertFile: "s.pem", KeyFile: "s.key", ClientCA: "ca.pem"}, "--callers"},
		{"development with a certificate", auth.Edge{InsecureDev: true, CertFile: "s.pem"}, "exclude each other"},
		{"development with a client CA", auth.Edge{InsecureDev: true, ClientCA: "ca.pem"}, "exclude each other"},
		{"development with full TLS", func() auth.Edge { e := full; e.InsecureDev = true; return e }(), "exclude each other"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.edge.Check()
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Check() = %v, want %q", err, tt.want)
			}
		})
	}
}
