package worker

import (
	"errors"
	"fmt"

	"github.com/loom-plugins/sandbox-cloudrun/internal/lockdown"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
)

// openFilesLimit is the worker's RLIMIT_NOFILE: above the highest
// descriptor it holds (its standard streams, its channel, the Go runtime's
// poller and cgroup files), far below anything useful to a guest that
// escaped. No descriptor can be created after the lock-down anyway.
const openFilesLimit = 32

// lockDown applies the worker's lock-down as h asks, after the engine is
// compiled and warm. It returns what is on; with LockdownRequired, any step
// that fails on a system that supports the lock-down is an error, and the
// worker refuses to start.
func lockDown(h hello) (Protections, error) {
	var p Protections
	if h.Lockdown == LockdownOff || !lockdown.Supported() {
		return p, nil // elsewhere than Linux: the start-up log says so
	}
	opts := lockdown.Options{OpenFiles: openFilesLimit}
	var err error
	if !raceDetector {
		// a race-detector build's shadow memory alone reserves terabytes
		opts.AddressSpaceBytes, err = addressSpaceLimit(h.Engine)
	}
	var st lockdown.Status
	if err == nil {
		st, err = lockdown.Apply(opts)
	}
	p.NoNewPrivs, p.ResourceLimits, p.Seccomp = st.NoNewPrivs, st.ResourceLimits && st.Undumpable, st.Seccomp
	if err != nil {
		if h.Lockdown == LockdownRequired || errors.Is(err, lockdown.ErrApplied) {
			return p, fmt.Errorf("worker: lock-down failed (WORKER_LOCKDOWN=%s): %w", h.Lockdown, err)
		}
	}
	return p, nil
}

// addressSpaceLimit is the worker's RLIMIT_AS: what the warm worker has
// mapped (the Go runtime's reservations, about 1.2 GiB before main runs,
// the compiled code, the pool's first memories) plus every linear memory
// the engine can hold at once plus a heap's growth. The runtime's share
// does not scale with the memory maximum, so a formula of the maximum alone
// (lockdown.AddressSpaceFor) is not used: at small maximums it fell below
// what is mapped and every worker refused to start.
func addressSpaceLimit(e EngineOptions) (uint64, error) {
	used, err := lockdown.AddressSpaceUsed()
	if err != nil {
		return 0, err
	}
	memories := quickjs.LinearMemoriesAtMost(e.PoolSize)
	return used + uint64(memories)*lockdown.LinearMemoryBytes(e.MaxMemoryBytes) + 1<<30, nil
}
