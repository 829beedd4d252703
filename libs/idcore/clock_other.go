//go:build !linux

package idcore

import (
	"errors"
	"time"
)

func (kernelHealth) ReadClock() (KernelClock, error) {
	return KernelClock{}, errors.New("idcore: clock discipline cannot be read on this system")
}

func preciseSleep(d time.Duration) { time.Sleep(d) }
