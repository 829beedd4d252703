//go:build linux

package idcore

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

func (kernelHealth) ReadClock() (KernelClock, error) {
	var tx unix.Timex // modes 0: read only
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return KernelClock{}, fmt.Errorf("idcore: adjtimex: %w", err)
	}
	return KernelClock{
		Synchronized:   tx.Status&unix.STA_UNSYNC == 0 && state != unix.TIME_ERROR,
		EstimatedError: time.Duration(tx.Esterror) * time.Microsecond,
		MaxError:       time.Duration(tx.Maxerror) * time.Microsecond,
	}, nil
}

// preciseSleep blocks the thread in nanosleep, which the kernel ends within tens of microseconds,
// unlike the runtime timer's millisecond granularity.
func preciseSleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_ = unix.Nanosleep(&ts, nil)
}
