package worker

import "sync"

// idleWorkers holds the workers ready for a run. The one returned last is
// taken first: a worker that has just answered is still awake, its
// processor not yet halted and its caches warm, so back-to-back runs go to
// it, and the spares stay asleep until they are needed.
type idleWorkers struct {
	mu sync.Mutex
	ws []*proc
	// ready holds a token while ws may be non-empty; a waiter that takes
	// a worker passes the token on if others remain.
	ready chan struct{}
}

func newIdleWorkers(capacity int) *idleWorkers {
	return &idleWorkers{ws: make([]*proc, 0, capacity), ready: make(chan struct{}, 1)}
}

// put makes w available.
func (s *idleWorkers) put(w *proc) {
	s.mu.Lock()
	s.ws = append(s.ws, w)
	s.mu.Unlock()
	s.signal()
}

// take removes and returns the worker put last, or nil if none is ready.
func (s *idleWorkers) take() *proc {
	s.mu.Lock()
	n := len(s.ws)
	if n == 0 {
		s.mu.Unlock()
		return nil
	}
	w := s.ws[n-1]
	s.ws[n-1] = nil
	s.ws = s.ws[:n-1]
	more := n > 1
	s.mu.Unlock()
	if more {
		s.signal()
	}
	return w
}

// len is how many workers are ready.
func (s *idleWorkers) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ws)
}

func (s *idleWorkers) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}
