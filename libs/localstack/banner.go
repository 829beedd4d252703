package localstack

import (
	"fmt"
	"strings"
)

// Banner is what make run prints once the stack is up: what runs where, and commands to try
// (the "Try:" lines, which go test ./docs runs). logs is the run's log folder as the reader sees
// it (.idgen/logs/<start time>/).
func (s *Stack) Banner(logs string) string {
	gens := s.Generators()
	u := func(name string) string { return s.Service(name).URL() }
	reg, pub, demo := u("registry"), u("public-id"), u("demo-orders")
	gw := "http://" + GatewayAddr(s.Services)
	var b strings.Builder
	fmt.Fprintf(&b, "\nidgen is running locally (state in .idgen/, logs in %s; clock check: warn, development only)\n\n", logs)
	row := func(what, url, note string) {
		line := fmt.Sprintf("  %-21s %-23s %s", what, url, note)
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	row("registry", reg, "regions and layouts (plaintext dev mode: you are admin)")
	for i, g := range gens {
		note := ""
		if i == 0 {
			note = "REST, Connect, gRPC, /healthz, /metrics"
		}
		row("generator "+g.Region, g.URL(), note)
	}
	row("public-id (internal)", pub, "POST /v1/public-ids, GET /v1/public-ids/{public_id}")
	row("gateway (customers)", gw, "/orders/{public_id}, /customers/{public_id}/orders -> demo orders, public IDs only")
	row("gateway (operator)", "http://"+s.Service("public-id-gateway").HealthAddr, "/metrics, /healthz")
	row("demo orders", demo, "internal upstream: POST /internal/checkout, GET /internal/orders/{id}, ...")

	first, second := gens[0].URL(), gens[len(gens)-1].URL()
	b.WriteString("\nTry:\n")
	for _, line := range []string{
		"curl -s -X POST " + first + "/v1/ids -H 'Content-Type: application/json' -d '{}'",
		"curl -s -X POST " + second + "/v1/ids:batch -H 'Content-Type: application/json' -d '{\"count\": 5}'",
		"curl -s " + first + "/v1/ids/$(curl -s -X POST " + second + "/v1/ids -H 'Content-Type: application/json' -d '{}' | sed 's/.*\"id\":\"\\([0-9]*\\)\".*/\\1/')/decode",
		"curl -s " + first + "/healthz",
		"curl -s -X POST " + first + "/idgen.v1.IdService/Generate -H 'Content-Type: application/json' -d '{}'",
		"curl -s " + reg + "/v1/regions",
		"co=$(curl -s -X POST " + demo + "/internal/checkout -H 'Content-Type: application/json' -d '{\"customer\":\"Ada\",\"items\":[{\"sku\":\"book-1\",\"quantity\":2,\"unit_cents\":2100}]}'); echo \"$co\"",
		"ord=$(echo \"$co\" | sed 's/.*\"order\":\"\\([^\"]*\\)\".*/\\1/'); cus=$(echo \"$co\" | sed 's/.*\"customer\":\"\\([^\"]*\\)\".*/\\1/')",
		"curl -s " + gw + "/orders/$ord",
		"curl -s \"" + gw + "/customers/$cus/orders?status=placed\"",
		".idgen/bin/idgenctl health --region " + gens[len(gens)-1].Region,
		".idgen/bin/idgenctl leases list --region " + gens[0].Region,
		"# make setup first for this one: it builds grpcurl into .tools/bin",
		".tools/bin/grpcurl -plaintext " + strings.TrimPrefix(first, "http://") + " list",
	} {
		b.WriteString("  " + line + "\n")
	}
	b.WriteString("\nCtrl-C stops everything and releases the leases.\n")
	return b.String()
}
