//go:build !linux

package quickjs

import "time"

// cpuClock measures nothing off Linux: a run's CPU time is reported as
// zero, which Usage reads as not measured.
type cpuClock struct{}

func startCPUClock() cpuClock           { return cpuClock{} }
func (cpuClock) elapsed() time.Duration { return 0 }
