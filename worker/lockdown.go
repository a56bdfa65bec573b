package worker

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/loom-plugins/sandbox-cloudrun/internal/lockdown"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
)

// applyLockdown is lockdown.Apply; a test puts a failing one in its place,
// since a real step fails only on a system that refuses it.
var applyLockdown = lockdown.Apply

// openFilesLimit is the worker's RLIMIT_NOFILE: above the highest
// descriptor it holds (its standard streams, its channel, the Go runtime's
// poller and cgroup files), far below anything useful to a guest that
// escaped. No descriptor can be created after the lock-down anyway.
const openFilesLimit = 32

// lockDown applies the worker's lock-down as h asks, after the engine is
// compiled and warm. It returns what is on; with LockdownRequired, any step
// that fails on a system that supports the lock-down is an error, and the
// worker refuses to start. With LockdownBestEffort the worker runs with what
// was applied, and says at WARNING which step failed and what is off: the
// start-up line's protections alone would not say why.
func lockDown(h hello, log *slog.Logger) (Protections, error) {
	var p Protections
	if h.Lockdown == LockdownOff || !lockdown.Supported() {
		return p, nil // elsewhere than Linux: the start-up log says so
	}
	opts := lockdown.Options{OpenFiles: openFilesLimit}
	if !raceDetector {
		// a race-detector build's shadow memory alone reserves terabytes;
		// the kept compiled scripts are mapped beside the memories
		opts.AddressSpaceBytes = lockdown.AddressSpaceFor(quickjs.LinearMemoryBytes(h.Engine.MaxMemoryBytes),
			quickjs.LinearMemoriesAtMost(h.Engine.PoolSize)) + uint64(h.Engine.CompiledScriptBytes)
	}
	st, err := applyLockdown(opts)
	p.NoNewPrivs, p.ResourceLimits, p.Seccomp = st.NoNewPrivs, st.ResourceLimits && st.Undumpable, st.Seccomp
	if err != nil {
		if h.Lockdown == LockdownRequired || errors.Is(err, lockdown.ErrApplied) {
			return p, fmt.Errorf("worker: lock-down failed (WORKER_LOCKDOWN=%s): %w", h.Lockdown, err)
		}
		log.Warn("lock-down incomplete (WORKER_LOCKDOWN=best-effort): the worker runs without what failed",
			"noNewPrivs", p.NoNewPrivs, "resourceLimits", p.ResourceLimits, "seccomp", p.Seccomp, "err", err.Error())
	}
	return p, nil
}
