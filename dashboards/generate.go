package dashboards

import (
	"fmt"
	"os"
	"path/filepath"
)

// Generated files, relative to the dashboards module.
const (
	RulesFile     = "prometheus/idgen-alerts.yml"
	RuleTestsFile = "prometheus/idgen-alerts_test.yml"
	GrafanaDir    = "grafana"
)

// Generate writes every generated file under dir (the dashboards module, or a temporary folder to
// compare with it), reading the thresholds from thresholdsPath.
func Generate(dir, thresholdsPath string, o Options) error {
	t, err := LoadThresholds(thresholdsPath)
	if err != nil {
		return err
	}
	if o.RunbookBase == "" {
		o.RunbookBase = t.RunbookBase
	}
	files := map[string][]byte{}
	if files[RulesFile], err = RenderRules(t, o); err != nil {
		return err
	}
	if files[RuleTestsFile], err = RenderRuleTests(t, o, filepath.Base(RulesFile)); err != nil {
		return err
	}
	for _, d := range Dashboards {
		if files[filepath.Join(GrafanaDir, d.File)], err = d.Build(); err != nil {
			return fmt.Errorf("dashboard %s: %w", d.UID, err)
		}
	}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
