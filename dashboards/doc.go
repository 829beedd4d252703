// Package dashboards generates idgen's Prometheus alert rules and Grafana dashboards from code and
// from deploy/alert-thresholds.json, the one source of every alert's threshold and duration.
package dashboards
