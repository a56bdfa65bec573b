package quickjs

import (
	"time"

	"golang.org/x/sys/unix"
)

// cpuClock measures the processor time of a run from the goroutine that
// runs the guest: the thread's own clock when the goroutine stayed on one
// thread, which it does unless the scheduler moved it, and the process's
// otherwise (in a worker, which runs one guest at a time, nearly the same).
// Both are clock_gettime, which a locked-down worker may call.
type cpuClock struct {
	tid             int
	thread, process time.Duration
}

func startCPUClock() cpuClock {
	return cpuClock{tid: unix.Gettid(), thread: threadCPU(), process: processCPU()}
}

// elapsed is the processor time since start, read on the goroutine that
// called startCPUClock.
func (c cpuClock) elapsed() time.Duration {
	if unix.Gettid() == c.tid {
		return max(threadCPU()-c.thread, 0)
	}
	return max(processCPU()-c.process, 0)
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

func processCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
