package gameday_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/tools/gameday"
)

func load(t *testing.T, name string) *gameday.Scenario {
	t.Helper()
	sc, err := gameday.LoadScenario(filepath.Join("scenarios", name))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func root(t *testing.T) string {
	t.Helper()
	r, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestOneRegionLoss runs the short scenario (make test's): five regions, eu-west-1's fleet
// killed and started again, Prometheus watching the callers, then the public-ID side of
// us-east-1, us-west-2 and eu-west-1 through us-west-2 lost for good and back empty, us-east-1's
// store frozen and us-east-1 partitioned from us-west-2. Every check passes: eu-west-1's caller
// moved to us-east-1 and back, the others stayed home, the embedded nodes went on, no duplicate,
// no error, IdgenClientOnPeerRegion fired for caller-eu-west-1; no 404 for an acknowledged public
// ID, us-west-2 answered every one once it took customers again, and every region every one at
// the end.
func TestOneRegionLoss(t *testing.T) {
	out := t.TempDir()
	res, err := gameday.Run(context.Background(), gameday.Options{Scenario: load(t, "short.json"), Seed: 1, Root: root(t),
		Out: out, Prometheus: true, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Table)
	if len(res.Failures) > 0 {
		t.Fatalf("checks failed:\n%s", strings.Join(res.Failures, "\n"))
	}
	killed := res.Phases[1]
	var eu *gameday.Row
	for i, r := range killed.Rows {
		if r.Who == "caller-eu-west-1" {
			eu = &killed.Rows[i]
		}
	}
	if eu == nil || eu.ByNumber[0] == 0 || eu.ByNumber[2] == 0 || eu.ToPeer < 0 || eu.BackHome < 0 {
		t.Fatalf("caller-eu-west-1 in the kill phase: %+v; want IDs from 2 (eu-west-1) and 0 (us-east-1, its peer), a move and a return", eu)
	}
	if !strings.Contains(res.Table, "IdgenClientOnPeerRegion fired") {
		t.Fatal("the table does not say IdgenClientOnPeerRegion fired")
	}
	if res.IDs < 10000 {
		t.Fatalf("%d IDs checked", res.IDs)
	}
	// The public-ID side: us-west-2 lost for good and back, us-east-1's store frozen, us-east-1
	// and us-west-2 partitioned; every acknowledged public ID answered everywhere at the end.
	c := res.Customers
	if c == nil || c.Acked < 50 || c.Resolves < 3*c.Acked/2 || c.NotFound != 0 || c.EndMissing != 0 || c.EndAsked != 3*c.Acked {
		t.Fatalf("customers: %+v", c)
	}
	lost := res.Phases[2].Customers
	if lost.Ready < 0 || lost.BackChecked == 0 || lost.BackMissing != 0 {
		t.Fatalf("the public-ID region lost and back: %+v", lost)
	}
}

// TestWrongPeer: a topology whose eu-west-1 fails over to ap-northeast-1, while the registry (and
// so the design) gives it us-east-1: the run fails, naming eu-west-1 and both peers.
func TestWrongPeer(t *testing.T) {
	sc := load(t, "short.json")
	sc.Phases, sc.Customers = sc.Phases[:2], nil            // the callers' phases only: the failure is a caller's
	sc.Phases[0].Settle = gameday.Duration(2 * time.Second) // shorter: the failure shows in the first seconds of the loss
	sc.Phases[1].Hold = gameday.Duration(4 * time.Second)
	sc.Phases[1].Settle = gameday.Duration(3 * time.Second)
	vars := map[string]any{"regions": map[string]any{
		"us-east-1":      map[string]any{"number": 0, "peer": "us-west-2"},
		"us-west-2":      map[string]any{"number": 1, "peer": "us-east-1"},
		"eu-west-1":      map[string]any{"number": 2, "peer": "ap-northeast-1"},
		"ap-northeast-1": map[string]any{"number": 3, "peer": "ap-southeast-1"},
		"ap-southeast-1": map[string]any{"number": 4, "peer": "ap-northeast-1"},
	}}
	res, err := gameday.Run(context.Background(), gameday.Options{Scenario: sc, Seed: 1, Root: root(t), Out: t.TempDir(),
		TopologyVars: vars, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Table)
	want := "caller-eu-west-1 took"
	found := false
	for _, f := range res.Failures {
		if strings.Contains(f, want) && strings.Contains(f, "3 (ap-northeast-1)") && strings.Contains(f, "its peer is us-east-1 (0)") {
			found = true
		} else if !strings.Contains(f, "caller-eu-west-1") {
			t.Errorf("a failure not about eu-west-1's peer: %s", f)
		}
	}
	if !found {
		t.Fatalf("no failure naming eu-west-1's wrong peer; failures:\n%s", strings.Join(res.Failures, "\n"))
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
