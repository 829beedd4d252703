#!/usr/bin/env bash
# Starts Prometheus and Alertmanager (Debian's, from make setup) against the local stack of
# `make run` (registry :7000, generators :7001 and :7002, public-ID :7003, its gateway's operator listener :7006), with idgen's alert
# rules from dashboards/prometheus. State under .idgen/observe/; Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
state="$PWD/.idgen/observe"
mkdir -p "$state"
prom_addr=127.0.0.1:9090 am_addr=127.0.0.1:9093
cat >"$state/alertmanager.yml" <<YML
route: {receiver: default, group_wait: 10s, group_interval: 1m, repeat_interval: 4h}
receivers: [{name: default}]
YML
cat >"$state/prometheus.yml" <<YML
global: {scrape_interval: 5s, evaluation_interval: 5s}
rule_files: ["$PWD/dashboards/prometheus/idgen-alerts.yml"]
alerting: {alertmanagers: [{static_configs: [{targets: ["$am_addr"]}]}]}
scrape_configs:
  - job_name: idgen-generator
    honor_labels: true
    static_configs:
      - {targets: ["127.0.0.1:7001"], labels: {region: us-east-1}}
      - {targets: ["127.0.0.1:7002"], labels: {region: eu-west-1}}
  - job_name: idgen-registry
    honor_labels: true
    static_configs: [{targets: ["127.0.0.1:7000"], labels: {region: global}}]
  - job_name: idgen-public-id
    honor_labels: true
    static_configs: [{targets: ["127.0.0.1:7003"], labels: {region: us-east-1}}]
  - job_name: idgen-public-id-gateway
    honor_labels: true
    static_configs: [{targets: ["127.0.0.1:7006"], labels: {region: us-east-1}}]
YML
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true' EXIT INT TERM
prometheus-alertmanager --config.file "$state/alertmanager.yml" --storage.path "$state/alertmanager" \
  --web.listen-address "$am_addr" --cluster.listen-address "" >"$state/alertmanager.log" 2>&1 &
pids+=($!)
prometheus --config.file "$state/prometheus.yml" --storage.tsdb.path "$state/prometheus" \
  --web.listen-address "$prom_addr" >"$state/prometheus.log" 2>&1 &
pids+=($!)
cat <<INFO
observe: scraping the local stack of make run (start it first), logs in .idgen/observe/

  Prometheus     http://$prom_addr            alerts: http://$prom_addr/alerts
  Alertmanager   http://$am_addr
  rules          dashboards/prometheus/idgen-alerts.yml (runbooks: runbooks/alerts/)
  dashboards     dashboards/grafana/*.json (import into Grafana with this Prometheus as data source)

On make run's stack IdgenClockCheckWarnMode fires (its generators run --clock-check warn), and
IdgenClockUnhealthy too when this machine's clock is not synchronized. Ctrl-C stops both.
INFO
wait -n "${pids[@]}" || true
echo "observe: a server exited; see .idgen/observe/*.log"
