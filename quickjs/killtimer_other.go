//go:build !linux

package quickjs

import (
	"errors"
	"time"
)

type killTimer struct{}

func newKillTimer() (*killTimer, error) {
	return nil, errors.New("quickjs: the process-kill backstop needs Linux timer_create")
}

func (k *killTimer) arm(time.Duration) error { return nil }
func (k *killTimer) release()                {}

const processKillSupported = false
