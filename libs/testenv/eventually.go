package testenv

import (
	"testing"
	"time"
)

// Eventually waits until cond reports true and fails the test with cond's last status when
// timeout passes first. It checks cond at once, then at intervals growing from 1 ms to 20 ms.
//
// Tests wait on the condition they need instead of sleeping for a fixed time: they go on as soon
// as it holds, and a slow or busy machine gets the whole timeout. Call it from the test's own
// goroutine (it calls t.Fatalf).
func Eventually(t testing.TB, timeout time.Duration, cond func() (ok bool, status string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	poll := time.Millisecond
	for {
		ok, status := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, status)
		}
		time.Sleep(poll) // the polling interval, not a wait for the condition
		poll = min(2*poll, 20*time.Millisecond)
	}
}
