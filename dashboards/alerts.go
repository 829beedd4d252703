package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ThresholdsFile is the one source of every alert's threshold and duration, relative to the
// repository root.
const ThresholdsFile = "deploy/alert-thresholds.json"

// RunbookDir holds one runbook per alert, <name>.md, relative to the repository root.
const RunbookDir = "runbooks/alerts"

// Threshold is one alert of the thresholds document.
type Threshold struct {
	Name       string  `json:"name"`
	Source     string  `json:"source"`   // cloudwatch or prometheus: the side that evaluates it
	Severity   string  `json:"severity"` // page or ticket
	Threshold  float64 `json:"threshold"`
	Comparison string  `json:"comparison"` // above or below
	For        string  `json:"for"`
	Unit       string  `json:"unit"`
	Meaning    string  `json:"meaning"`
}

// Thresholds is the thresholds document.
type Thresholds struct {
	Description string `json:"description"`
	// RunbookBase is the repository's web address ("https://…/blob/main/"): with it each
	// runbook's path is a link that opens in Alertmanager, Slack or the AWS console.
	RunbookBase string      `json:"runbook_base"`
	Alerts      []Threshold `json:"alerts"`
}

// LoadThresholds reads the thresholds document.
func LoadThresholds(path string) (Thresholds, error) {
	var t Thresholds
	b, err := os.ReadFile(path)
	if err != nil {
		return t, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return t, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Prometheus returns the alerts Prometheus evaluates, in document order.
func (t Thresholds) Prometheus() []Threshold {
	var out []Threshold
	for _, a := range t.Alerts {
		if a.Source == "prometheus" {
			out = append(out, a)
		}
	}
	return out
}

// Series is one input series of a promtool unit test, in promtool's expanding notation.
type Series struct{ Metric, Values string }

// Rule is what the code knows of a Prometheus alert; its threshold, comparison, duration and
// severity come from the thresholds document.
type Rule struct {
	Name string
	// Expr is the PromQL whose value is compared with the threshold.
	Expr string
	// Summary is the alert's one-line summary; {{ $labels.NAME }} is replaced by the label.
	Summary string
	// Fire and Calm are promtool unit test inputs, as functions of the threshold: with Fire the
	// alert fires at EvalAfter past its duration with FireLabels; with Calm it does not fire.
	Fire, Calm func(th float64) []Series
	FireLabels map[string]string
	// Eval is when the unit tests evaluate the alert: "" is 25m, for series of 30 minutes and
	// durations of at most 15m; a longer duration needs longer series (long) and a later Eval.
	Eval string
}

const gen = `job="idgen-generator", instance="gen-1", region="us-east-1"`

// pid and pid2 are public-ID processes of us-east-1 (the internal API and the gateway), as
// scraped: serve.RegionLabeled and the target labels give every series the process's region.
const (
	pid  = `job="idgen-public-id", instance="pid-1", region="us-east-1"`
	pid2 = `job="idgen-public-id-gateway", instance="pid-gw-1", region="us-east-1"`
)

// events is how many times a counter of rare events counted in the last 5 minutes, including a
// series that appeared within them (a counter child is created by its first event, and increase()
// does not count that first one). A new series counts its value; `or` matches without the metric
// name, so the new series come first.
func events(sel string) string {
	return fmt.Sprintf("(%s unless %s offset 5m) or increase(%s[5m])", sel, sel, sel)
}

func constant(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) + "x30" }

// long is constant for the rules whose duration is longer than 15 minutes: 60 minutes of v.
func long(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) + "x60" }

// perMinute returns a counter rising by r per second, sampled every minute.
func perMinute(r float64) string { return "0+" + strconv.FormatFloat(r*60, 'g', -1, 64) + "x30" }

// Rules are the Prometheus alerts, one per alert of source prometheus in the thresholds document.
var Rules = []Rule{
	{
		Name:       "IdgenGeneratorDown",
		Expr:       `up{job="idgen-generator"}`,
		Summary:    "Generator {{ $labels.instance }} in {{ $labels.region }} cannot be scraped",
		Fire:       func(th float64) []Series { return []Series{{"up{" + gen + "}", constant(th - 1)}} },
		Calm:       func(th float64) []Series { return []Series{{"up{" + gen + "}", constant(th)}} },
		FireLabels: map[string]string{"job": "idgen-generator", "instance": "gen-1", "region": "us-east-1"},
	},
	{
		Name:       "IdgenRegistryUnreachable",
		Expr:       `count by (region) (idgen_generator_registry_reachable == 0)`,
		Summary:    "Generators in {{ $labels.region }} cannot read the registry",
		Fire:       func(th float64) []Series { return registryUnreachable(int(th) + 1) },
		Calm:       func(th float64) []Series { return registryUnreachable(int(th)) },
		FireLabels: map[string]string{"region": "us-east-1"},
	},
	{
		Name:    "IdgenIDsRefused",
		Expr:    `sum by (region, reason) (rate(idgen_generator_refusals_total[5m]))`,
		Summary: "Generators in {{ $labels.region }} refuse IDs: {{ $labels.reason }}",
		Fire: func(th float64) []Series {
			return []Series{{`idgen_generator_refusals_total{` + gen + `, reason="fence"}`, perMinute(th + 1)}}
		},
		Calm: func(th float64) []Series {
			return []Series{{`idgen_generator_refusals_total{` + gen + `, reason="fence"}`, perMinute(th)}}
		},
		FireLabels: map[string]string{"region": "us-east-1", "reason": "fence"},
	},
	{
		Name: "IdgenRequestErrors",
		Expr: `sum by (region) (rate(idgen_server_requests_total{code=~"unavailable|internal|unknown|deadline_exceeded|data_loss"}[5m]))` +
			` / sum by (region) (rate(idgen_server_requests_total[5m]))`,
		Summary: "More than the allowed share of generator requests in {{ $labels.region }} fail",
		Fire: func(th float64) []Series {
			return []Series{
				{`idgen_server_requests_total{` + gen + `, route="/v1/ids", protocol="rest", code="unavailable"}`, perMinute(10 * th)},
				{`idgen_server_requests_total{` + gen + `, route="/v1/ids", protocol="rest", code="ok"}`, perMinute(1)},
			}
		},
		Calm: func(th float64) []Series {
			return []Series{
				{`idgen_server_requests_total{` + gen + `, route="/v1/ids", protocol="rest", code="unavailable"}`, perMinute(th / 10)},
				{`idgen_server_requests_total{` + gen + `, route="/v1/ids", protocol="rest", code="ok"}`, perMinute(1)},
			}
		},
		FireLabels: map[string]string{"region": "us-east-1"},
	},
	{
		Name:    "IdgenLatencyHigh",
		Expr:    `histogram_quantile(0.99, sum by (region, le) (rate(idgen_server_request_duration_seconds_bucket{route!~"/healthz|/metrics"}[5m])))`,
		Summary: "p99 latency of generator requests in {{ $labels.region }} is high",
		Fire: func(th float64) []Series {
			return latency(th, 2*th)
		},
		Calm: func(th float64) []Series {
			return latency(th, th/2)
		},
		FireLabels: map[string]string{"region": "us-east-1"},
	},
	{
		Name:    "IdgenQuotaRejections",
		Expr:    `sum by (region, caller) (rate(idgen_server_quota_rejections_total[5m]))`,
		Summary: "Caller {{ $labels.caller }} is over its quota in {{ $labels.region }}",
		Fire: func(th float64) []Series {
			return []Series{{`idgen_server_quota_rejections_total{` + gen + `, caller="orders"}`, perMinute(th + 1)}}
		},
		Calm: func(th float64) []Series {
			return []Series{{`idgen_server_quota_rejections_total{` + gen + `, caller="orders"}`, perMinute(th)}}
		},
		FireLabels: map[string]string{"region": "us-east-1", "caller": "orders"},
	},
	{
		Name:    "IdgenLeaseFenceNear",
		Expr:    `min by (region, instance, layout) (idgen_generator_fence_remaining_seconds and idgen_generator_machine_number >= 0)`,
		Summary: "Generator {{ $labels.instance }} in {{ $labels.region }} is close to its lease fence",
		Fire: func(th float64) []Series {
			return []Series{
				{`idgen_generator_fence_remaining_seconds{` + gen + `, layout="v2"}`, constant(th / 2)},
				{`idgen_generator_machine_number{` + gen + `, layout="v2"}`, constant(7)},
			}
		},
		Calm: func(th float64) []Series {
			return []Series{
				{`idgen_generator_fence_remaining_seconds{` + gen + `, layout="v2"}`, constant(th * 5)},
				{`idgen_generator_machine_number{` + gen + `, layout="v2"}`, constant(7)},
				// Holding nothing: the fence is 0, and another alert tells.
				{`idgen_generator_fence_remaining_seconds{job="idgen-generator", instance="gen-2", region="us-east-1", layout="v2"}`, constant(0)},
				{`idgen_generator_machine_number{job="idgen-generator", instance="gen-2", region="us-east-1", layout="v2"}`, constant(-1)},
			}
		},
		FireLabels: map[string]string{"region": "us-east-1", "instance": "gen-1", "layout": "v2"},
	},
	{
		Name:    "IdgenLeaseRenewalsFailing",
		Expr:    `sum by (region, instance, layout, result) (` + events(`idgen_lease_renewals_total{result=~"lapsed|error"}`) + `)`,
		Summary: "Generator {{ $labels.instance }} in {{ $labels.region }} dropped its lease: {{ $labels.result }}",
		Fire: func(th float64) []Series {
			// One lapse: the series appears with its first event.
			return []Series{{`idgen_lease_renewals_total{` + gen + `, layout="v2", result="lapsed"}`, "_x20 " + strconv.FormatFloat(th+1, 'g', -1, 64) + "x10"}}
		},
		Calm: func(th float64) []Series {
			// An old lapse, long before the evaluation.
			return []Series{
				{`idgen_lease_renewals_total{` + gen + `, layout="v2", result="lapsed"}`, constant(th + 1)},
				{`idgen_lease_renewals_total{` + gen + `, layout="v2", result="ok"}`, perMinute(1)},
			}
		},
		FireLabels: map[string]string{"region": "us-east-1", "instance": "gen-1", "layout": "v2", "result": "lapsed"},
	},
	{
		Name:    "IdgenLeaseLost",
		Expr:    `sum by (region, instance, layout, result) (` + events(`idgen_lease_renewals_total{result=~"lost|table_changed"}`) + `)`,
		Summary: "Generator {{ $labels.instance }} in {{ $labels.region }} found its lease no longer in the table ({{ $labels.result }}) and dropped its number",
		Fire: func(th float64) []Series {
			return []Series{{`idgen_lease_renewals_total{` + gen + `, layout="v2", result="lost"}`, "_x20 " + strconv.FormatFloat(th+1, 'g', -1, 64) + "x10"}}
		},
		Calm: func(th float64) []Series {
			return []Series{
				{`idgen_lease_renewals_total{` + gen + `, layout="v2", result="lost"}`, constant(th + 1)},
				{`idgen_lease_renewals_total{` + gen + `, layout="v2", result="ok"}`, perMinute(1)},
			}
		},
		FireLabels: map[string]string{"region": "us-east-1", "instance": "gen-1", "layout": "v2", "result": "lost"},
	},
	{
		Name: "IdgenLeaseStoreErrors",
		Expr: `sum by (region, instance) (label_replace(increase(idgen_lease_renewals_total{result="error"}[5m]), "call", "renew", "", "")` +
			` or label_replace(increase(idgen_lease_claims_total{result="error"}[5m]), "call", "claim", "", ""))`,
		Summary: "Generator {{ $labels.instance }} in {{ $labels.region }} cannot reach its lease store",
		Fire: func(th float64) []Series {
			return []Series{{`idgen_lease_renewals_total{` + gen + `, layout="v2", result="error"}`, perMinute(th + 1)}}
		},
		Calm: func(th float64) []Series {
			return []Series{{`idgen_lease_renewals_total{` + gen + `, layout="v2", result="error"}`, constant(th + 3)}}
		},
		FireLabels: map[string]string{"region": "us-east-1", "instance": "gen-1"},
	},
	{
		Name:       "IdgenClockUnhealthy",
		Expr:       `idgen_clock_healthy`,
		Summary:    "Generator {{ $labels.instance }} in {{ $labels.region }} has an untrusted clock",
		Fire:       func(th float64) []Series { return []Series{{"idgen_clock_healthy{" + gen + "}", constant(th - 1)}} },
		Calm:       func(th float64) []Series { return []Series{{"idgen_clock_healthy{" + gen + "}", constant(th)}} },
		FireLabels: map[string]string{"job": "idgen-generator", "instance": "gen-1", "region": "us-east-1"},
	},
	{
		Name:    "IdgenClockCheckWarnMode",
		Expr:    `idgen_clock_check_warn_mode`,
		Summary: "Generator {{ $labels.instance }} in {{ $labels.region }} issues IDs with the clock check in warn mode",
		Fire: func(th float64) []Series {
			return []Series{{"idgen_clock_check_warn_mode{" + gen + "}", constant(th + 1)}}
		},
		Calm:       func(th float64) []Series { return []Series{{"idgen_clock_check_warn_mode{" + gen + "}", constant(th)}} },
		FireLabels: map[string]string{"job": "idgen-generator", "instance": "gen-1", "region": "us-east-1"},
	},
	{
		Name:       "IdgenMachineRangeNearlyFull",
		Expr:       `count by (region, layout) (idgen_generator_machine_number >= 0)`,
		Summary:    "Most machine numbers of {{ $labels.region }} ({{ $labels.layout }}) are held",
		Fire:       func(th float64) []Series { return holders(int(th) + 1) },
		Calm:       func(th float64) []Series { return holders(int(th)) },
		FireLabels: map[string]string{"region": "us-east-1", "layout": "v2"},
	},
	{
		Name:    "IdgenNoFreeMachineNumber",
		Expr:    `sum by (region, instance, layout) (` + events(`idgen_lease_claims_total{result="none_free"}`) + `)`,
		Summary: "Generator {{ $labels.instance }} in {{ $labels.region }} found no free machine number",
		Fire: func(th float64) []Series {
			return []Series{{`idgen_lease_claims_total{` + gen + `, layout="v2", result="none_free"}`, "_x20 " + strconv.FormatFloat(th+1, 'g', -1, 64) + "+1x10"}}
		},
		Calm: func(th float64) []Series {
			return []Series{{`idgen_lease_claims_total{` + gen + `, layout="v2", result="none_free"}`, constant(th + 1)}}
		},
		FireLabels: map[string]string{"region": "us-east-1", "instance": "gen-1", "layout": "v2"},
	},
	{
		Name:    "IdgenClientOnPeerRegion",
		Expr:    `max by (job, instance) (idgen_client_active_endpoint)`,
		Summary: "Client {{ $labels.job }} ({{ $labels.instance }}) takes IDs from its peer region",
		Fire: func(th float64) []Series {
			return []Series{{`idgen_client_active_endpoint{job="orders", instance="orders-1"}`, constant(th + 1)}}
		},
		Calm: func(th float64) []Series {
			return []Series{{`idgen_client_active_endpoint{job="orders", instance="orders-1"}`, constant(th)}}
		},
		FireLabels: map[string]string{"job": "orders", "instance": "orders-1"},
	},
	{
		Name:    "IdgenGatewayStoreUnavailable",
		Expr:    `sum by (job, instance) (rate(idgen_gateway_requests_total{outcome="store_unavailable"}[5m]))`,
		Summary: "Gateway {{ $labels.instance }} cannot reach the public-ID store",
		Fire: func(th float64) []Series {
			return []Series{{`idgen_gateway_requests_total{job="idgen-public-id-gateway", instance="pid-1", route="order", outcome="store_unavailable"}`, perMinute(th + 1)}}
		},
		Calm: func(th float64) []Series {
			return []Series{
				{`idgen_gateway_requests_total{job="idgen-public-id-gateway", instance="pid-1", route="order", outcome="store_unavailable"}`, constant(th + 4)},
				{`idgen_gateway_requests_total{job="idgen-public-id-gateway", instance="pid-1", route="order", outcome="ok"}`, perMinute(5)},
			}
		},
		FireLabels: map[string]string{"job": "idgen-public-id-gateway", "instance": "pid-1"},
	},
	{
		Name:    "IdgenGatewayRateStoreErrors",
		Expr:    `sum by (job, instance) (rate(idgen_gateway_rate_store_errors_total[5m]))`,
		Summary: "Gateway {{ $labels.instance }} limits clients on its own: its rate checks fail in the rate limits' Redis",
		Fire: func(th float64) []Series {
			return []Series{{`idgen_gateway_rate_store_errors_total{job="idgen-public-id-gateway", instance="pid-1"}`, perMinute(th + 1)}}
		},
		Calm: func(th float64) []Series {
			return []Series{{`idgen_gateway_rate_store_errors_total{job="idgen-public-id-gateway", instance="pid-1"}`, perMinute(th / 2)}}
		},
		FireLabels: map[string]string{"job": "idgen-public-id-gateway", "instance": "pid-1"},
	},
	{
		Name:    "IdgenGatewayUnsafeResponse",
		Expr:    `sum by (job, instance, route) (` + events(`idgen_gateway_requests_total{outcome="unsafe_response"}`) + `)`,
		Summary: "Gateway {{ $labels.instance }} blocked an upstream response on route {{ $labels.route }} that held an internal ID",
		Fire: func(th float64) []Series {
			return []Series{{`idgen_gateway_requests_total{job="idgen-public-id-gateway", instance="pid-1", route="order", outcome="unsafe_response"}`, "_x20 " + strconv.FormatFloat(th+1, 'g', -1, 64) + "x10"}}
		},
		Calm: func(th float64) []Series {
			return []Series{{`idgen_gateway_requests_total{job="idgen-public-id-gateway", instance="pid-1", route="order", outcome="unsafe_response"}`, constant(th + 1)}}
		},
		FireLabels: map[string]string{"job": "idgen-public-id-gateway", "instance": "pid-1", "route": "order"},
	},
	{
		Name:    "IdgenPublicIDStoreVolatile",
		Expr:    `max by (job, instance) (idgen_publicid_store_volatile)`,
		Summary: "Public-ID service {{ $labels.instance }} runs on a volatile mapping store",
		Fire: func(th float64) []Series {
			return []Series{{`idgen_publicid_store_volatile{job="idgen-public-id", instance="pid-1"}`, constant(th + 1)}}
		},
		Calm: func(th float64) []Series {
			return []Series{{`idgen_publicid_store_volatile{job="idgen-public-id", instance="pid-1"}`, constant(th)}}
		},
		FireLabels: map[string]string{"job": "idgen-public-id", "instance": "pid-1"},
	},
	{
		Name:    "IdgenPublicIDCopiesBelowTwo",
		Expr:    `min by (job, instance, region) (idgen_publicid_copies_required)`,
		Summary: "Public-ID process {{ $labels.instance }} in {{ $labels.region }} acknowledges mappings held by one region only",
		Fire: func(th float64) []Series {
			return []Series{{`idgen_publicid_copies_required{` + pid + `}`, constant(th - 1)}}
		},
		Calm: func(th float64) []Series {
			return []Series{{`idgen_publicid_copies_required{` + pid + `}`, constant(th)}}
		},
		FireLabels: map[string]string{"job": "idgen-public-id", "instance": "pid-1", "region": "us-east-1"},
	},
	{
		Name:    "IdgenPublicIDPublishesShort",
		Expr:    `sum by (region) (rate(idgen_publicid_region_publishes_total{result="short"}[5m]))`,
		Summary: "Publishes in {{ $labels.region }} are refused: fewer regions answered than a mapping needs copies",
		Fire: func(th float64) []Series {
			return []Series{
				{`idgen_publicid_region_publishes_total{` + pid + `, result="short"}`, perMinute(th + 1)},
				{`idgen_publicid_region_publishes_total{` + pid + `, result="ok"}`, perMinute(5)},
			}
		},
		Calm: func(th float64) []Series {
			// Short publishes long ago, none in the last 5 minutes.
			return []Series{
				{`idgen_publicid_region_publishes_total{` + pid + `, result="short"}`, "0+60x15 900x15"},
				{`idgen_publicid_region_publishes_total{` + pid + `, result="ok"}`, perMinute(5)},
			}
		},
		FireLabels: map[string]string{"region": "us-east-1"},
	},
	{
		Name:    "IdgenPublicIDRegionFilling",
		Expr:    `min by (region) (idgen_publicid_region_filled)`,
		Summary: "The mapping store of {{ $labels.region }} is still being filled: the region takes no customers",
		Fire: func(th float64) []Series {
			return []Series{
				{`idgen_publicid_region_filled{` + pid + `}`, long(th - 1)},
				{`idgen_publicid_region_filled{` + pid2 + `}`, long(th - 1)},
			}
		},
		Calm: func(th float64) []Series {
			// Filled after 20 minutes, within the fill's time.
			return []Series{
				{`idgen_publicid_region_filled{` + pid + `}`, fmt.Sprintf("%gx20 %gx40", th-1, th)},
				{`idgen_publicid_region_filled{` + pid2 + `}`, long(th)},
			}
		},
		FireLabels: map[string]string{"region": "us-east-1"},
		Eval:       "55m",
	},
	{
		Name:    "IdgenPublicIDRegionUnreachable",
		Expr:    `sum by (region, store_region) (rate(idgen_publicid_region_calls_total{result="unavailable"}[5m]))`,
		Summary: "Public-ID processes in {{ $labels.region }} get no answer from the mapping store of {{ $labels.store_region }}",
		Fire: func(th float64) []Series {
			return []Series{
				{`idgen_publicid_region_calls_total{` + pid + `, store_region="eu-west-1", op="resolve", result="unavailable"}`, perMinute(th + 1)},
				{`idgen_publicid_region_calls_total{` + pid + `, store_region="us-east-1", op="resolve", result="ok"}`, perMinute(5)},
			}
		},
		Calm: func(th float64) []Series {
			// A blip 20 minutes ago; every call answered since.
			return []Series{
				{`idgen_publicid_region_calls_total{` + pid + `, store_region="eu-west-1", op="resolve", result="unavailable"}`, "0x5 0+30x2 60x23"},
				{`idgen_publicid_region_calls_total{` + pid + `, store_region="eu-west-1", op="resolve", result="ok"}`, perMinute(5)},
			}
		},
		FireLabels: map[string]string{"region": "us-east-1", "store_region": "eu-west-1"},
	},
	{
		Name:    "IdgenPublicIDTwoPublicIDs",
		Expr:    `sum by (region) (increase(idgen_publicid_region_publishes_total{result="two_public_ids"}[1h]))`,
		Summary: "A publish in {{ $labels.region }} found an internal ID with two public IDs: a partition between regions",
		Fire: func(th float64) []Series {
			return []Series{
				{`idgen_publicid_region_publishes_total{` + pid + `, result="two_public_ids"}`, fmt.Sprintf("0x20 %gx10", th+1)},
				{`idgen_publicid_region_publishes_total{` + pid + `, result="ok"}`, perMinute(5)},
			}
		},
		Calm: func(th float64) []Series {
			return []Series{
				{`idgen_publicid_region_publishes_total{` + pid + `, result="two_public_ids"}`, constant(th)},
				{`idgen_publicid_region_publishes_total{` + pid + `, result="ok"}`, perMinute(5)},
			}
		},
		FireLabels: map[string]string{"region": "us-east-1"},
	},
	{
		Name:       "IdgenTLSCertificateExpiringSoon",
		Expr:       certExpiry,
		Summary:    "The {{ $labels.kind }} certificate of {{ $labels.job }} {{ $labels.instance }} expires soon and was not renewed",
		Fire:       func(th float64) []Series { return expiring(th / 2) },
		Calm:       func(th float64) []Series { return expiring(2 * th) },
		FireLabels: map[string]string{"job": "idgen-generator", "instance": "gen-1", "region": "us-east-1", "kind": "server"},
	},
	{
		Name:       "IdgenTLSCertificateExpiryImminent",
		Expr:       certExpiry,
		Summary:    "The {{ $labels.kind }} certificate of {{ $labels.job }} {{ $labels.instance }} is about to expire or has expired",
		Fire:       func(th float64) []Series { return expiring(th / 2) },
		Calm:       func(th float64) []Series { return expiring(2 * th) },
		FireLabels: map[string]string{"job": "idgen-generator", "instance": "gen-1", "region": "us-east-1", "kind": "server"},
	},
}

// certExpiry is how long until each certificate a process uses expires (negative once it has):
// a process exports the expiry of the certificate in use, which a renewal on disk moves.
const certExpiry = `min by (job, instance, region, kind) (idgen_tls_certificate_expiry_timestamp_seconds) - time()`

// expiring returns a server certificate that expires in about `in` seconds at the tests'
// evaluation time (25 minutes into promtool's clock, which starts at 0).
func expiring(in float64) []Series {
	return []Series{{`idgen_tls_certificate_expiry_timestamp_seconds{` + gen + `, kind="server"}`, strconv.FormatFloat(in+1500, 'f', -1, 64) + "x30"}}
}

// latency returns histogram buckets whose 99th percentile lies near p (p > th or p < th).
func latency(th, p float64) []Series {
	var out []Series
	for _, le := range []float64{p / 2, p, 4 * p} {
		rate := 0.0
		if le >= p {
			rate = 1
		}
		out = append(out, Series{fmt.Sprintf(`idgen_server_request_duration_seconds_bucket{%s, route="/v1/ids", le="%g"}`, gen, le), perMinute(rate)})
	}
	return append(out, Series{`idgen_server_request_duration_seconds_bucket{` + gen + `, route="/v1/ids", le="+Inf"}`, perMinute(1)})
}

// registryUnreachable returns n generators that cannot read the registry, beside one that can.
func registryUnreachable(n int) []Series {
	out := []Series{{`idgen_generator_registry_reachable{job="idgen-generator", instance="gen-ok", region="us-east-1"}`, constant(1)}}
	for i := range n {
		out = append(out, Series{fmt.Sprintf(`idgen_generator_registry_reachable{job="idgen-generator", instance="gen-%d", region="us-east-1"}`, i), constant(0)})
	}
	return out
}

// holders returns n generators holding a machine number each.
func holders(n int) []Series {
	var out []Series
	for i := range n {
		out = append(out, Series{fmt.Sprintf(`idgen_generator_machine_number{job="idgen-generator", instance="gen-%d", region="us-east-1", layout="v2"}`, i), constant(float64(i))})
	}
	return out
}

// Options change how the rules render.
type Options struct {
	// RunbookBase prefixes each runbook_url (runbooks/alerts/NAME.md): "" takes the thresholds
	// document's runbook_base; another URL or a folder (tests) replaces it.
	RunbookBase string
	// For, when set, replaces every rule's duration (tests that cannot wait minutes).
	For string
}

// RunbookURL returns an alert's runbook_url.
func (o Options) RunbookURL(name string) string {
	return o.RunbookBase + RunbookDir + "/" + name + ".md"
}

type ruleFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name  string      `yaml:"name"`
	Rules []alertRule `yaml:"rules"`
}

type alertRule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// resolve pairs each rule with its thresholds; every prometheus alert of the document needs a
// rule and every rule an alert.
func resolve(t Thresholds) ([]Rule, []Threshold, error) {
	byName := map[string]Rule{}
	for _, r := range Rules {
		byName[r.Name] = r
	}
	var rules []Rule
	var ths []Threshold
	seen := map[string]bool{}
	for _, a := range t.Prometheus() {
		r, ok := byName[a.Name]
		if !ok {
			return nil, nil, fmt.Errorf("alert %s of %s has no rule in dashboards.Rules", a.Name, ThresholdsFile)
		}
		if a.Comparison != "above" && a.Comparison != "below" {
			return nil, nil, fmt.Errorf("alert %s: comparison %q", a.Name, a.Comparison)
		}
		seen[a.Name] = true
		rules, ths = append(rules, r), append(ths, a)
	}
	for _, r := range Rules {
		if !seen[r.Name] {
			return nil, nil, fmt.Errorf("rule %s has no alert of source prometheus in %s", r.Name, ThresholdsFile)
		}
	}
	return rules, ths, nil
}

func op(a Threshold) string {
	if a.Comparison == "below" {
		return "<"
	}
	return ">"
}

// AlertExpr is the alert's full condition.
func AlertExpr(r Rule, a Threshold) string {
	return fmt.Sprintf("(%s) %s %s", r.Expr, op(a), strconv.FormatFloat(a.Threshold, 'g', -1, 64))
}

const header = "# Generated by dashboards/cmd/gen from deploy/alert-thresholds.json and dashboards/alerts.go: do not edit.\n"

// RenderRules renders the Prometheus rule file.
func RenderRules(t Thresholds, o Options) ([]byte, error) {
	rules, ths, err := resolve(t)
	if err != nil {
		return nil, err
	}
	g := ruleGroup{Name: "idgen"}
	for i, r := range rules {
		a := ths[i]
		f := a.For
		if o.For != "" {
			f = o.For
		}
		g.Rules = append(g.Rules, alertRule{
			Alert: r.Name, Expr: AlertExpr(r, a), For: f,
			Labels: map[string]string{"severity": a.Severity},
			Annotations: map[string]string{
				"summary":     r.Summary,
				"description": a.Meaning,
				"runbook_url": o.RunbookURL(r.Name),
			},
		})
	}
	return marshal(ruleFile{Groups: []ruleGroup{g}})
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(header)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

type unitFile struct {
	RuleFiles          []string   `yaml:"rule_files"`
	EvaluationInterval string     `yaml:"evaluation_interval"`
	Tests              []unitTest `yaml:"tests"`
}

type unitTest struct {
	Name       string         `yaml:"name"`
	Interval   string         `yaml:"interval"`
	InputSerie []inputSeries  `yaml:"input_series"`
	AlertTests []alertEvalCas `yaml:"alert_rule_test"`
}

type inputSeries struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

type alertEvalCas struct {
	EvalTime  string     `yaml:"eval_time"`
	Alertname string     `yaml:"alertname"`
	ExpAlerts []expAlert `yaml:"exp_alerts"`
}

type expAlert struct {
	ExpLabels      map[string]string `yaml:"exp_labels"`
	ExpAnnotations map[string]string `yaml:"exp_annotations"`
}

var labelRef = regexp.MustCompile(`\{\{ \$labels\.([a-z_]+) \}\}`)

// RenderRuleTests renders promtool unit tests for the rule file ruleFile: per alert, one test in
// which it fires and one in which it does not.
func RenderRuleTests(t Thresholds, o Options, ruleFile string) ([]byte, error) {
	rules, ths, err := resolve(t)
	if err != nil {
		return nil, err
	}
	u := unitFile{RuleFiles: []string{ruleFile}, EvaluationInterval: "1m"}
	for i, r := range rules {
		a := ths[i]
		eval := "25m" // every series runs 30 minutes; durations are at most 15m
		if r.Eval != "" {
			eval = r.Eval
		}
		labels := map[string]string{"severity": a.Severity}
		for k, v := range r.FireLabels {
			labels[k] = v
		}
		summary := labelRef.ReplaceAllStringFunc(r.Summary, func(m string) string {
			return r.FireLabels[labelRef.FindStringSubmatch(m)[1]]
		})
		for _, c := range []struct {
			name   string
			series []Series
			want   []expAlert
		}{
			{"fires", r.Fire(a.Threshold), []expAlert{{ExpLabels: labels, ExpAnnotations: map[string]string{
				"summary": summary, "description": a.Meaning, "runbook_url": o.RunbookURL(r.Name)}}}},
			{"does not fire", r.Calm(a.Threshold), []expAlert{}},
		} {
			ut := unitTest{Name: r.Name + " " + c.name, Interval: "1m"}
			for _, s := range c.series {
				ut.InputSerie = append(ut.InputSerie, inputSeries{s.Metric, s.Values})
			}
			if strings.Contains(r.Expr, "offset 5m") && c.name == "fires" {
				eval = "24m" // a new series counts for 5 minutes after it appears
			}
			ut.AlertTests = []alertEvalCas{{EvalTime: eval, Alertname: r.Name, ExpAlerts: c.want}}
			u.Tests = append(u.Tests, ut)
		}
	}
	return marshal(u)
}

// Names returns the names of the Prometheus rules, sorted.
func Names() []string {
	var out []string
	for _, r := range Rules {
		out = append(out, r.Name)
	}
	slices.Sort(out)
	return out
}
