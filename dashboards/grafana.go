package dashboards

import (
	"encoding/json"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Query is one PromQL target of a panel.
type Query struct{ Expr, Legend string }

// Panel is one panel of a dashboard.
type Panel struct {
	Title, Description, Unit string
	Stat                     bool // a stat panel (the latest value) rather than a time series
	Queries                  []Query
}

// Row is a titled group of panels.
type Row struct {
	Title  string
	Panels []Panel
}

// Dashboard is one generated dashboard.
type Dashboard struct {
	UID, Title, Description, File string
	// Region: the dashboard has a region variable ($region), taken from the generators' targets.
	Region bool
	Rows   []Row
}

const (
	rate     = "[$__rate_interval]"
	inRegion = `region="$region"`
	apiRoute = `route!~"/healthz|/metrics"`
)

// Dashboards are the generated dashboards: one overview templated by region, and the public-ID
// gateway's.
var Dashboards = []Dashboard{
	{
		UID: "idgen-region", Title: "idgen / region overview", File: "idgen-region.json", Region: true,
		Description: "The golden signals of one region's ID generators (pick the region above): IDs served and refused, errors, latency, leases, clocks, and clients failing over.",
		Rows: []Row{
			{"Traffic", []Panel{
				{Title: "IDs served per second, by caller", Unit: "ops",
					Description: "IDs handed to callers per second (idgen_server_ids_served_total), by caller. A drop with steady requests means refusals; a caller at a flat ceiling may be at its quota.",
					Queries:     []Query{{`sum by (caller) (rate(idgen_server_ids_served_total{` + inRegion + `}` + rate + `))`, "{{caller}}"}}},
				{Title: "IDs issued per second, by generator", Unit: "ops",
					Description: "IDs each generator process issued per second (idgen_generator_ids_issued_total). Uneven shares point at the load balancer or a generator refusing.",
					Queries:     []Query{{`sum by (instance) (rate(idgen_generator_ids_issued_total{` + inRegion + `}` + rate + `))`, "{{instance}}"}}},
				{Title: "Requests per second, by route and code", Unit: "reqps",
					Description: "Generator requests per second (idgen_server_requests_total) by route and outcome code: HTTP status for REST, Connect code otherwise.",
					Queries:     []Query{{`sum by (route, code) (rate(idgen_server_requests_total{` + inRegion + `}` + rate + `))`, "{{route}} {{code}}"}}},
			}},
			{"Errors", []Panel{
				{Title: "Refusals per second, by reason", Unit: "ops",
					Description: "Requests for an ID the generators refused (idgen_generator_refusals_total): clock_backwards, clock_unsynced, fence, no_lease, layout_not_configured, timestamp_exhausted. Alert: IdgenIDsRefused.",
					Queries:     []Query{{`sum by (reason) (rate(idgen_generator_refusals_total{` + inRegion + `}` + rate + `))`, "{{reason}}"}}},
				{Title: "Server error ratio", Unit: "percentunit",
					Description: "Share of generator requests ending in HTTP 5xx or a Connect unavailable, internal, unknown, deadline_exceeded or data_loss code. Alert: IdgenRequestErrors.",
					Queries: []Query{{`(sum(rate(idgen_server_requests_total{` + inRegion + `, code=~"unavailable|internal|unknown|deadline_exceeded|data_loss"}` + rate + `)) or vector(0))` +
						` / sum(rate(idgen_server_requests_total{` + inRegion + `}` + rate + `))`, "errors"}}},
				{Title: "Quota rejections per second, by caller", Unit: "reqps",
					Description: "Requests refused with 429 for being over the caller's quota (idgen_server_quota_rejections_total); empty while no caller is over. Alert: IdgenQuotaRejections.",
					Queries:     []Query{{`sum by (caller) (rate(idgen_server_quota_rejections_total{` + inRegion + `}` + rate + `))`, "{{caller}}"}}},
			}},
			{"Latency", []Panel{
				{Title: "Request latency p50 and p99", Unit: "s",
					Description: "Time to serve ID requests (idgen_server_request_duration_seconds, health and metrics routes excluded), 50th and 99th percentiles over the region. Alert: IdgenLatencyHigh.",
					Queries: []Query{
						{`histogram_quantile(0.5, sum by (le) (rate(idgen_server_request_duration_seconds_bucket{` + inRegion + `, ` + apiRoute + `}` + rate + `)))`, "p50"},
						{`histogram_quantile(0.99, sum by (le) (rate(idgen_server_request_duration_seconds_bucket{` + inRegion + `, ` + apiRoute + `}` + rate + `)))`, "p99"},
					}},
				{Title: "Waits before issuing, by cause", Unit: "ops",
					Description: "Waits a generator made before it could issue (idgen_generator_waits_total): back_step (the clock stepped back), sequence (the millisecond's sequence ran out), floor.",
					Queries:     []Query{{`sum by (cause) (rate(idgen_generator_waits_total{` + inRegion + `}` + rate + `))`, "{{cause}}"}}},
			}},
			{"Leases", []Panel{
				{Title: "Time left before the fence", Unit: "s",
					Description: "Seconds each generator has before its lease fence, per layout (idgen_generator_fence_remaining_seconds; 0 when it holds nothing). It saws between lease − margin and lease − margin − renew while renewals succeed. Alert: IdgenLeaseFenceNear.",
					Queries:     []Query{{`min by (instance, layout) (idgen_generator_fence_remaining_seconds{` + inRegion + `})`, "{{instance}} {{layout}}"}}},
				{Title: "Machine numbers held", Unit: "short", Stat: true,
					Description: "Generators of the region holding a machine number, per layout (idgen_generator_machine_number ≥ 0), out of 64 in the service range. Alert: IdgenMachineRangeNearlyFull.",
					Queries:     []Query{{`count by (layout) (idgen_generator_machine_number{` + inRegion + `} >= 0)`, "{{layout}}"}}},
				{Title: "Lease renewals, by result", Unit: "ops",
					Description: "Lease renewals per second (idgen_lease_renewals_total) by result: ok, lost, lapsed, table_changed, error. Alerts: IdgenLeaseRenewalsFailing, IdgenLeaseStoreErrors.",
					Queries:     []Query{{`sum by (result) (rate(idgen_lease_renewals_total{` + inRegion + `}` + rate + `))`, "{{result}}"}}},
				{Title: "Lease claims, by result", Unit: "short",
					Description: "Claim rounds (idgen_lease_claims_total) by result: ok, none_free, restored, error. Alert: IdgenNoFreeMachineNumber.",
					Queries:     []Query{{`sum by (result) (increase(idgen_lease_claims_total{` + inRegion + `}` + rate + `))`, "{{result}}"}}},
			}},
			{"Clock", []Panel{
				{Title: "Clock healthy and warn mode", Unit: "short",
					Description: "Per generator: 1 when its last clock check found the clock synchronized and within the limit (idgen_clock_healthy), and 1 when it runs with --clock-check warn (idgen_clock_check_warn_mode). Alerts: IdgenClockUnhealthy, IdgenClockCheckWarnMode.",
					Queries: []Query{
						{`min by (instance) (idgen_clock_healthy{` + inRegion + `})`, "healthy {{instance}}"},
						{`max by (instance) (idgen_clock_check_warn_mode{` + inRegion + `})`, "warn mode {{instance}}"},
					}},
				{Title: "Estimated clock error", Unit: "s",
					Description: "The kernel's estimated clock error at each generator's last check (idgen_clock_estimated_error_seconds); the fleet's bound is 5 ms.",
					Queries:     []Query{{`max by (instance) (idgen_clock_estimated_error_seconds{` + inRegion + `})`, "{{instance}}"}}},
			}},
			{"Fleet and clients", []Panel{
				{Title: "Generators up", Unit: "short", Stat: true,
					Description: "Generators of the region Prometheus scrapes successfully (up), out of those it knows. Alert: IdgenGeneratorDown.",
					Queries: []Query{
						{`sum(up{job="idgen-generator", ` + inRegion + `})`, "up"},
						{`count(up{job="idgen-generator", ` + inRegion + `})`, "known"},
					}},
				{Title: "Clients on the peer region", Unit: "short",
					Description: "Per client process of this region (libs/idclient): the endpoint in use, 0 for the local region, 1 for its peer (idgen_client_active_endpoint). Alert: IdgenClientOnPeerRegion.",
					Queries:     []Query{{`max by (job, instance) (idgen_client_active_endpoint{` + inRegion + `})`, "{{job}} {{instance}}"}}},
				{Title: "Client failovers", Unit: "short",
					Description: "Moves of clients (libs/idclient) from one endpoint to another (idgen_client_failovers_total): to the peer region and back.",
					Queries:     []Query{{`sum by (job, instance) (increase(idgen_client_failovers_total{` + inRegion + `}` + rate + `))`, "{{job}} {{instance}}"}}},
				{Title: "Client buffers", Unit: "short",
					Description: "IDs waiting in each client's prefetch buffer (idgen_client_buffer_ids); at 0 a caller waits for a round trip.",
					Queries:     []Query{{`sum by (job, instance) (idgen_client_buffer_ids{` + inRegion + `})`, "{{job}} {{instance}}"}}},
			}},
		},
	},
	{
		UID: "idgen-gateway", Title: "idgen / public-ID gateway", File: "idgen-gateway.json",
		Description: "The customer gateway of the public-ID service: requests by outcome, latency with and without the upstream, the mapping store and, when --store is regions:FILE, the cross-region store's regions.",
		Rows: []Row{
			{"Traffic and errors", []Panel{
				{Title: "Requests per second, by outcome", Unit: "reqps",
					Description: "Customer requests (idgen_gateway_requests_total) by outcome: ok, not_found, bad_request, method_not_allowed, rate_limited, busy, upstream_4xx, upstream_error, upstream_timeout, unsafe_response, store_unavailable.",
					Queries:     []Query{{`sum by (outcome) (rate(idgen_gateway_requests_total` + rate + `))`, "{{outcome}}"}}},
				{Title: "Requests per second, by route", Unit: "reqps",
					Description: "Customer requests per route of the gateway's allowlist (idgen_gateway_requests_total).",
					Queries:     []Query{{`sum by (route) (rate(idgen_gateway_requests_total` + rate + `))`, "{{route}}"}}},
				{Title: "Store unavailable and unsafe responses", Unit: "reqps",
					Description: "Requests answered store_unavailable (the mapping store did not answer; alert IdgenGatewayStoreUnavailable) and upstream responses blocked as unsafe_response (they held an internal ID; alert IdgenGatewayUnsafeResponse). 0 when none.",
					Queries: []Query{
						{`sum(rate(idgen_gateway_requests_total{outcome="store_unavailable"}` + rate + `)) or vector(0)`, "store_unavailable"},
						{`sum(rate(idgen_gateway_requests_total{outcome="unsafe_response"}` + rate + `)) or vector(0)`, "unsafe_response"},
					}},
			}},
			{"Latency", []Panel{
				{Title: "Request latency p99, by route", Unit: "s",
					Description: "Customer request latency, upstream included (idgen_gateway_request_duration_seconds), 99th percentile per route.",
					Queries:     []Query{{`histogram_quantile(0.99, sum by (route, le) (rate(idgen_gateway_request_duration_seconds_bucket` + rate + `)))`, "{{route}}"}}},
				{Title: "Upstream latency p99, by route", Unit: "s",
					Description: "Time the upstream takes to answer with headers (idgen_gateway_upstream_duration_seconds), 99th percentile per route; the gap to the request latency is the gateway's own work.",
					Queries:     []Query{{`histogram_quantile(0.99, sum by (route, le) (rate(idgen_gateway_upstream_duration_seconds_bucket` + rate + `)))`, "{{route}}"}}},
			}},
			{"Store and limits", []Panel{
				{Title: "Mapping store volatile", Unit: "short", Stat: true,
					Description: "1 while a public-ID process finds its mapping store can lose acknowledged mappings (idgen_publicid_store_volatile, read at start-up and every --redis-durability-check): publishes that would make a new mapping are refused (store_volatile), unless --accept-volatile-store. Alert: IdgenPublicIDStoreVolatile.",
					Queries:     []Query{{`max by (instance) (idgen_publicid_store_volatile)`, "{{instance}}"}}},
				{Title: "Clients in the rate limiter", Unit: "short",
					Description: "Client addresses in the gateway's per-client rate limiter table (idgen_gateway_rate_limit_clients), bounded by its size; with --rate-redis, only the clients whose checks the Redis failed, which the gateway then limited on its own.",
					Queries:     []Query{{`sum by (instance) (idgen_gateway_rate_limit_clients)`, "{{instance}}"}}},
				{Title: "Rate checks the rate Redis failed", Unit: "reqps",
					Description: "Per-client rate checks that the rate limits' Redis (--rate-redis) failed or did not answer within --rate-redis-timeout, per gateway (idgen_gateway_rate_store_errors_total); each was made by the gateway's own limiter, so while this is above 0 the region allows a client up to the rate once per gateway. 0 without --rate-redis. Alert: IdgenGatewayRateStoreErrors.",
					Queries:     []Query{{`sum by (instance) (rate(idgen_gateway_rate_store_errors_total` + rate + `))`, "{{instance}}"}}},
				{Title: "Public-ID processes up", Unit: "short", Stat: true,
					Description: "Public-ID processes that Prometheus scrapes successfully (up): the internal API (job idgen-public-id) and the gateway (job idgen-public-id-gateway, its --metrics-listen).",
					Queries:     []Query{{`sum by (job) (up{job=~"idgen-public-id|idgen-public-id-gateway"})`, "{{job}}"}}},
			}},
			{"Cross-region store (--store regions:FILE)", []Panel{
				{Title: "Region filled and copies required", Unit: "short", Stat: true,
					Description: "Per region, the lowest of its public-ID processes: idgen_publicid_region_filled (1 filled; 0 while its store is filled from the other regions, when it takes no customers: alert IdgenPublicIDRegionFilling) and idgen_publicid_copies_required (regions that must hold a mapping before a publish is acknowledged: 2, or 1 when an operator lowered it: alert IdgenPublicIDCopiesBelowTwo).",
					Queries: []Query{
						{`min by (region) (idgen_publicid_region_filled)`, "{{region}} filled"},
						{`min by (region) (idgen_publicid_copies_required)`, "{{region}} copies"},
					}},
				{Title: "Calls to each region's store that got no answer", Unit: "ops",
					Description: "Calls from the processes of each region (region) to each region's mapping store (store_region) ending unavailable (no answer within --store-timeout) or error (idgen_publicid_region_calls_total). Alert: IdgenPublicIDRegionUnreachable.",
					Queries: []Query{{`sum by (region, store_region, result) (rate(idgen_publicid_region_calls_total{result=~"unavailable|error"}` + rate + `))`,
						"{{region}} → {{store_region}} {{result}}"}}},
				{Title: "Cross-region publishes, by outcome", Unit: "ops",
					Description: "Publishes through the cross-region store (idgen_publicid_region_publishes_total): ok, short (too few regions answered: refused; alert IdgenPublicIDPublishesShort), filling (the local region is being filled: refused), chosen_away_from_owner, two_public_ids (a partition: alert IdgenPublicIDTwoPublicIDs).",
					Queries:     []Query{{`sum by (region, result) (rate(idgen_publicid_region_publishes_total` + rate + `))`, "{{region}} {{result}}"}}},
				{Title: "Resolves asked of the other regions, by outcome", Unit: "ops",
					Description: "Resolves the local region's store did not answer with a mapping (idgen_publicid_fanouts_total): found in another region, found_local, not_found, unavailable (too many regions did not answer to say), refused (too many fan-outs in flight), negative_cache.",
					Queries:     []Query{{`sum by (region, result) (rate(idgen_publicid_fanouts_total` + rate + `))`, "{{region}} {{result}}"}}},
				{Title: "Mappings copied by fills", Unit: "ops",
					Description: "Mappings a region's fill copied into its store from the other regions, each read back (idgen_publicid_fill_mappings_total): non-zero only while a region that came back empty is filled.",
					Queries:     []Query{{`sum by (region) (rate(idgen_publicid_fill_mappings_total` + rate + `))`, "{{region}}"}}},
			}},
		},
	},
}

// Build renders a dashboard as Grafana JSON.
func (d Dashboard) Build() ([]byte, error) {
	ds := dashboard.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}
	// The classic JSON model: what Grafana's file provisioning and import take on every version in
	// use; the v2 schema needs Grafana 12's dashboard v2 API.
	//lint:ignore SA1019 the classic dashboard model is the one provisioned from files
	b := dashboard.NewDashboardBuilder(d.Title).
		Uid(d.UID).
		Description(d.Description).
		Tags([]string{"idgen", "generated"}).
		Refresh("30s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneUtc).
		Readonly().
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus"))
	if d.Region {
		b = b.WithVariable(dashboard.NewQueryVariableBuilder("region").Label("Region").
			Description("The region whose generators the panels show.").
			Datasource(ds).
			Query(dashboard.StringOrMap{String: cog.ToPtr(`label_values(up{job="idgen-generator"}, region)`)}).
			Refresh(dashboard.VariableRefreshOnDashboardLoad).
			Sort(dashboard.VariableSortAlphabeticalAsc))
	}
	for _, row := range d.Rows {
		b = b.WithRow(dashboard.NewRowBuilder(row.Title))
		for _, p := range row.Panels {
			var targets []cog.Builder[variants.Dataquery]
			for i, q := range p.Queries {
				targets = append(targets, prometheus.NewDataqueryBuilder().Expr(q.Expr).LegendFormat(q.Legend).
					RefId(string(rune('A'+i))).Datasource(ds))
			}
			if p.Stat {
				b = b.WithPanel(stat.NewPanelBuilder().Title(p.Title).Description(p.Description).Unit(p.Unit).
					Datasource(ds).Targets(targets).Height(6).Span(6))
			} else {
				b = b.WithPanel(timeseries.NewPanelBuilder().Title(p.Title).Description(p.Description).Unit(p.Unit).
					Datasource(ds).Targets(targets).Height(8).Span(12))
			}
		}
	}
	out, err := b.Build()
	if err != nil {
		return nil, err
	}
	j, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(j, '\n'), nil
}
