package quickjs

import (
	"runtime/debug"
	"sync"
)

// gcHold keeps Go's garbage collector off while guests run.
//
// A guest runs wazero's compiled code, which the Go scheduler cannot preempt.
// Both ends of a garbage collection stop the world, and stopping the world
// waits for every running goroutine to reach a safe point: a guest stuck in
// one long native builtin never does, so a collection that starts meanwhile
// stalls every goroutine of the process, the watchdog that would answer the
// request included, until the guest returns or the kernel kills the process.
// With the collector off no collection can start: SetGCPercent(-1) also waits
// for a cycle in progress to finish, so none is running when the guest
// starts, and the runtime's two-minute forced collection honours it too.
//
// The collector is one per process, so the hold is too: the engines of a
// process share it, and it counts the runs in progress so that the last one
// to return restores the setting the first one found.
type gcHold struct {
	mu    sync.Mutex
	runs  int
	saved int
}

// processGC is the hold on the process's one garbage collector (see gcHold).
var processGC gcHold

func (h *gcHold) acquire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.runs == 0 {
		h.saved = debug.SetGCPercent(-1)
	}
	h.runs++
}

func (h *gcHold) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runs--
	if h.runs == 0 {
		debug.SetGCPercent(h.saved)
	}
}
