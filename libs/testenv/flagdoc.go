package testenv

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// CheckFlagDoc holds a README's flags against a command's: usage is the command's --help output
// (the flag package's PrintDefaults), readme the README's path. Every flag the command defines is
// named in the README's flags (a table whose rows start with "| `--", or a paragraph starting
// "Flags"), every flag the README names exists, and every default the README writes as a literal
// (a table's second column in backticks; "`--name` (value)" in a paragraph) is the command's.
func CheckFlagDoc(t testing.TB, usage, readme string) {
	t.Helper()
	defined := map[string]string{} // name → default ("" when none is printed)
	var name string
	for _, line := range strings.Split(usage, "\n") {
		if m := usageFlag.FindStringSubmatch(line); m != nil {
			name = m[1]
			defined[name] = ""
			continue
		}
		if m := usageDefault.FindStringSubmatch(line); m != nil && name != "" {
			defined[name] = strings.Trim(m[1], `"`)
		}
	}
	if len(defined) == 0 {
		t.Fatalf("no flags in the usage text:\n%s", usage)
	}
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	check := func(name, value string) {
		def, ok := defined[name]
		if !ok {
			t.Errorf("%s: --%s is not a flag of the command", readme, name)
			return
		}
		if value != "" && !sameDefault(value, def) {
			t.Errorf("%s: --%s defaults to %q, the README says %q", readme, name, def, value)
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		cells := strings.Split(line, "|")
		names := docFlag.FindAllStringSubmatch(cells[1], -1)
		var defaults []string
		if len(cells) > 2 {
			for _, d := range strings.Split(cells[2], ",") {
				defaults = append(defaults, strings.TrimSpace(d))
			}
		}
		for i, n := range names {
			documented[n[1]] = true
			value := ""
			if i < len(defaults) && len(names) == len(defaults) && strings.HasPrefix(defaults[i], "`") {
				value = strings.Trim(defaults[i], "`")
			}
			check(n[1], value)
		}
	}
	if i := strings.Index(string(b), "\nFlags ("); i >= 0 {
		para := string(b[i+1:])
		if j := strings.Index(para, "\n\n"); j >= 0 {
			para = para[:j]
		}
		for _, m := range paraFlag.FindAllStringSubmatch(para, -1) {
			if _, seen := documented[m[1]]; seen && m[2] == "" {
				continue
			}
			documented[m[1]] = true
			check(m[1], m[2])
		}
	}
	for name := range defined {
		if !documented[name] {
			t.Errorf("%s: --%s is a flag of the command the README does not name", readme, name)
		}
	}
}

var (
	usageFlag    = regexp.MustCompile(`^  -([a-z0-9-]+)`)
	usageDefault = regexp.MustCompile(`\(default (.*)\)\s*$`)
	docFlag      = regexp.MustCompile("`--([a-z0-9-]+)`")
	// "`--listen` (127.0.0.1:7000)": a plain value in parentheses right after the name
	paraFlag = regexp.MustCompile("`--([a-z0-9-]+)[^`]*`(?:\\s+\\(([^ ()`]+)\\))?")
)

func sameDefault(doc, def string) bool {
	if doc == def || def == "" && (doc == "0" || doc == "false") { // the flag package prints no zero default
		return true
	}
	a, err1 := time.ParseDuration(doc)
	b, err2 := time.ParseDuration(def)
	return err1 == nil && err2 == nil && a == b
}
