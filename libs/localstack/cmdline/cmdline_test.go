package cmdline_test

import (
	"strings"
	"testing"

	"github.com/idgen/idgen/libs/localstack/cmdline"
)

func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"registry", cmdline.Registry{Listen: "127.0.0.1:1", Store: "sqlite:r.db"}.Args(), "--insecure-dev --listen 127.0.0.1:1 --store sqlite:r.db"},
		{"registry on TLS", cmdline.Registry{TLS: true, Listen: "a:1", Extra: []string{"--tls-cert", "c"}}.Args(), "--listen a:1 --tls-cert c"},
		// Only the flags set, in a fixed order, the clock check warn unless given, Extra last.
		{"generator", cmdline.Generator{Region: "eu-west-1", Listen: "a:2", LeaseStore: "sqlite:l.db", Lease: "3s", Extra: []string{"--range", "7-7"}}.Args(),
			"--insecure-dev --clock-check warn --region eu-west-1 --listen a:2 --lease-store sqlite:l.db --lease 3s --range 7-7"},
		{"generator, every field", cmdline.Generator{TLS: true, ClockCheck: "strict", Schedule: "v2", Registry: "http://r", Region: "r", RegionNumber: "0",
			Listen: "l", LeaseStore: "s", Range: "service", Lease: "1", Renew: "2", FenceMargin: "3", Drain: "4", HealthListen: "h",
			DeregistrationDelay: "5", RegistryCache: "c"}.Args(),
			"--clock-check strict --schedule v2 --registry http://r --region r --region-number 0 --listen l --lease-store s --range service " +
				"--lease 1 --renew 2 --fence-margin 3 --drain 4 --health-listen h --deregistration-delay 5 --registry-cache c"},
		{"public-id", cmdline.PublicID{Listen: "a:3", Store: "redis:x", Resources: "ord,cus", Extra: []string{"--mapping-cache-bytes", "0"}}.Args(),
			"--insecure-dev --listen a:3 --store redis:x --resources ord,cus --mapping-cache-bytes 0"},
		{"gateway", cmdline.Gateway{Listen: "a:4", MetricsListen: "a:5", Store: "redis:x", Routes: "r.json", DeregistrationDelay: "0"}.Args(),
			"--listen a:4 --metrics-listen a:5 --store redis:x --routes r.json --deregistration-delay 0"},
	} {
		if got := strings.Join(tc.args, " "); got != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}
