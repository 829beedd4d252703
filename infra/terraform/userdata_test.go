package terraform

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

const userDataFile = fleetDir + "/user_data.sh.tftpl"

// chronyLines are the chrony configuration every host runs with (Amazon Time Sync Service).
var chronyLines = []string{
	"server 169.254.169.123 prefer iburst minpoll 4 maxpoll 4",
	"makestep 1.0 3",
}

var (
	// waitsync is a bounded wait: chronyc waitsync with a number of tries.
	waitsyncLine = regexp.MustCompile(`^chronyc waitsync [1-9][0-9]*\b`)
	// startLine starts (or enables and starts) the service's unit.
	startLine = regexp.MustCompile(`^systemctl (start|enable --now|restart) (idgen-\S+|\$\{unit\})`)
	// execStartPre waits for sync before every start of the unit, restarts and reboots included.
	execStartPre = regexp.MustCompile(`^ExecStartPre=/usr/bin/chronyc waitsync [1-9][0-9]*\b`)
)

// checkUserData: the boot script writes both chrony lines, waits (bounded, failing the boot) for
// sync, and only after that starts the service; the unit waits for sync before every start.
func checkUserData(script string) []string {
	var problems []string
	lines := strings.Split(script, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	index := func(match func(string) bool) int {
		for i, l := range lines {
			if !strings.HasPrefix(l, "#") && match(l) {
				return i
			}
		}
		return -1
	}
	for _, want := range chronyLines {
		if index(func(l string) bool { return l == want }) < 0 {
			problems = append(problems, fmt.Sprintf("no chrony line %q", want))
		}
	}
	wait := index(waitsyncLine.MatchString)
	if wait < 0 {
		problems = append(problems, "no bounded chronyc waitsync (with a number of tries)")
	} else if !strings.Contains(lines[wait], "||") && !strings.Contains(script, "set -e") {
		problems = append(problems, "a failed chronyc waitsync does not fail the boot")
	}
	start := index(startLine.MatchString)
	switch {
	case start < 0:
		problems = append(problems, "no line starts the service's unit")
	case wait >= 0 && start < wait:
		problems = append(problems, fmt.Sprintf("the service starts (line %d) before chronyc waitsync (line %d)", start+1, wait+1))
	}
	for i, l := range lines {
		if i != start && startLine.MatchString(l) && wait >= 0 && i < wait {
			problems = append(problems, fmt.Sprintf("the service starts (line %d) before chronyc waitsync (line %d)", i+1, wait+1))
		}
	}
	if index(execStartPre.MatchString) < 0 {
		problems = append(problems, "the unit has no ExecStartPre chronyc waitsync")
	}
	return problems
}

func TestUserData(t *testing.T) {
	b, err := os.ReadFile(userDataFile)
	if err != nil {
		t.Fatal(err)
	}
	wantProblems(t, checkUserData(string(b)))

	// The launch template renders this file.
	c := parseDir(t, fleetDir)
	if !strings.Contains(c.source(c.blocks("locals", "")[0].Body.SrcRange), `templatefile("${path.module}/user_data.sh.tftpl"`) {
		t.Errorf("%s does not render user_data.sh.tftpl", fleetDir)
	}
}

func TestUserDataCatch(t *testing.T) {
	const good = `#!/bin/bash
set -euo pipefail
cat > /etc/chrony.conf <<'CHRONY'
server 169.254.169.123 prefer iburst minpoll 4 maxpoll 4
makestep 1.0 3
CHRONY
chronyc waitsync 120 0.005 0 1 || fail "no sync"
cat > /etc/systemd/system/idgen-generator.service <<'UNIT'
ExecStartPre=/usr/bin/chronyc waitsync 120 0.005 0 1
UNIT
systemctl enable --now idgen-generator.service
`
	cases := []struct {
		name, script string
		want         []string
	}{
		{"good", good, nil},
		{"start before sync", strings.Replace(good, "cat > /etc/chrony.conf", "systemctl start idgen-generator.service\ncat > /etc/chrony.conf", 1), []string{"starts (line 3) before"}},
		{"unbounded wait", strings.Replace(good, "chronyc waitsync 120 0.005 0 1 || fail", "chronyc waitsync || fail", 1), []string{"no bounded chronyc waitsync"}},
		{"commented out", strings.Replace(good, "chronyc waitsync 120 0.005 0 1 || fail", "# chronyc waitsync 120 0.005 0 1 || fail", 1), []string{"no bounded chronyc waitsync"}},
		{"wrong server", strings.Replace(good, "maxpoll 4\n", "maxpoll 10\n", 1), []string{"no chrony line \"server"}},
		{"no makestep", strings.Replace(good, "makestep 1.0 3\n", "", 1), []string{"makestep"}},
		{"no ExecStartPre", strings.Replace(good, "ExecStartPre=", "# ExecStartPre=", 1), []string{"no ExecStartPre"}},
		{"no start", strings.Replace(good, "systemctl enable --now", "echo", 1), []string{"no line starts"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantProblems(t, checkUserData(tc.script), tc.want...) })
	}
}
