package testenv

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// NLBMember is a process behind a FakeNLB (a *proc.Proc with the name it is registered under).
type NLBMember interface {
	NLBName() string
	Signal(os.Signal) error
	Done() <-chan struct{}
}

// RollingDeploy replaces the processes of fleet one at a time behind lb, as a deploy does: for
// each, it launches the replacement (launch registers it with lb), sends the old process SIGTERM,
// waits up to 30 s for the replacement to be healthy in the load balancer and up to 60 s for the
// old process to exit, then deregisters the old one. Replacements are named prefix-N, counting on
// from the fleet's size. It returns how long the deploy took; fleet holds the new processes.
func RollingDeploy[M NLBMember](t *testing.T, lb *FakeNLB, fleet []M, prefix string, launch func(name string) M) time.Duration {
	t.Helper()
	began := time.Now()
	for i := range fleet {
		old := fleet[i]
		repl := launch(fmt.Sprintf("%s-%d", prefix, len(fleet)+i))
		if err := old.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		termAt := time.Now()
		Eventually(t, 30*time.Second, lb.Healthy(repl.NLBName()))
		select {
		case <-old.Done():
		case <-time.After(60 * time.Second):
			t.Fatalf("%s did not exit within 60 s of its SIGTERM", old.NLBName())
		}
		t.Logf("%s: exited %v after its SIGTERM; %s healthy", old.NLBName(), time.Since(termAt).Round(time.Millisecond), repl.NLBName())
		lb.Deregister(old.NLBName())
		fleet[i] = repl
	}
	return time.Since(began)
}
