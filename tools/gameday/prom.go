package gameday

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/idgen/idgen/dashboards"
	"github.com/idgen/idgen/libs/localstack/proc"
)

// promRun is a local Prometheus with idgen's alert rules (durations AlertFor) scraping the callers.
type promRun struct {
	p         *proc.Proc
	url       string
	instances map[string]string // caller name → its scrape target (instance label)
}

func startPrometheus(ctx context.Context, root, dir string, metricsPorts map[string]int) (*promRun, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	th, err := dashboards.LoadThresholds(filepath.Join(root, dashboards.ThresholdsFile))
	if err != nil {
		return nil, err
	}
	rules, err := dashboards.RenderRules(th, dashboards.Options{For: AlertFor})
	if err != nil {
		return nil, err
	}
	rulesFile := filepath.Join(dir, "idgen-alerts.yml")
	if err := os.WriteFile(rulesFile, rules, 0o644); err != nil {
		return nil, err
	}
	pr := &promRun{instances: map[string]string{}}
	var targets []string
	for region, port := range metricsPorts {
		inst := fmt.Sprintf("127.0.0.1:%d", port)
		pr.instances["caller-"+region] = inst
		targets = append(targets, fmt.Sprintf("      - {targets: [%q], labels: {region: %s}}", inst, region))
	}
	cfg := "global: {scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s}\n" +
		"rule_files: [" + fmt.Sprintf("%q", rulesFile) + "]\n" +
		"scrape_configs:\n  - job_name: gameday-callers\n    honor_labels: true\n    static_configs:\n" + strings.Join(targets, "\n") + "\n"
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	port, err := proc.PickPort()
	if err != nil {
		return nil, err
	}
	pr.url = fmt.Sprintf("http://127.0.0.1:%d", port)
	p, err := proc.Start(ctx, proc.Spec{Name: "prometheus", Bin: "prometheus", Log: filepath.Join(dir, "prometheus.log"),
		Args: []string{"--config.file", cfgFile, "--storage.tsdb.path", filepath.Join(dir, "data"),
			"--web.listen-address", fmt.Sprintf("127.0.0.1:%d", port)},
		HealthURL: pr.url + "/-/ready"})
	if err != nil {
		return nil, fmt.Errorf("gameday: prometheus (make setup installs it): %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := p.WaitHealthy(wctx); err != nil {
		_ = p.Kill()
		return nil, err
	}
	pr.p = p
	return pr, nil
}

func (pr *promRun) stop() { _ = pr.p.Stop() }

// firing reports whether IdgenClientOnPeerRegion fires for the scrape target inst.
func (pr *promRun) firing(inst string) (bool, error) {
	resp, err := http.Get(pr.url + "/api/v1/alerts")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return false, err
	}
	for _, a := range body.Data.Alerts {
		if a.Labels["alertname"] == "IdgenClientOnPeerRegion" && a.Labels["instance"] == inst && a.State == "firing" {
			return true, nil
		}
	}
	return false, nil
}

// alertSeen is what a watch saw of IdgenClientOnPeerRegion for one caller in one phase.
type alertSeen struct {
	phase, region string
	fired         bool
	firedAfter    time.Duration // from the watch's start (the fault)
	resolvedAfter time.Duration // from its firing to its end; -1 when still firing at the phase's end
}

func resolvedText(a alertSeen) string {
	if a.resolvedAfter < 0 {
		return "not by the phase's end"
	}
	return ms(a.resolvedAfter) + " after it fired"
}

type alertWatch struct {
	stopc chan struct{}
	wg    sync.WaitGroup
	seen  alertSeen
}

// watch polls the alert for caller until result is called.
func (pr *promRun) watch(ctx context.Context, caller string) *alertWatch {
	w := &alertWatch{stopc: make(chan struct{})}
	inst := pr.instances[caller]
	start := time.Now()
	w.wg.Go(func() {
		var firedAt time.Time
		w.seen.resolvedAfter = -1
		for {
			select {
			case <-w.stopc:
				return
			case <-ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
			on, err := pr.firing(inst)
			if err != nil {
				continue
			}
			switch {
			case on && firedAt.IsZero():
				firedAt = time.Now()
				w.seen.fired, w.seen.firedAfter = true, firedAt.Sub(start)
			case !on && !firedAt.IsZero() && w.seen.resolvedAfter < 0:
				w.seen.resolvedAfter = time.Since(firedAt)
			}
		}
	})
	return w
}

func (w *alertWatch) result(phase, region string) alertSeen {
	close(w.stopc)
	w.wg.Wait()
	w.seen.phase, w.seen.region = phase, region
	return w.seen
}
