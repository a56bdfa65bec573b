package worker

import (
	"sync"
	"testing"
	"time"
)

// The worker returned last is taken first, so back-to-back runs go to the
// worker that has just answered.
func TestIdleWorkersTakeTheLastReturnedFirst(t *testing.T) {
	s := newIdleWorkers(3)
	a, b, c := &proc{pid: 1}, &proc{pid: 2}, &proc{pid: 3}
	for _, w := range []*proc{a, b, c} {
		s.put(w)
	}
	if got := s.take(); got != c {
		t.Fatalf("took worker %d first, want the last returned (3)", got.pid)
	}
	s.put(c)
	for _, want := range []*proc{c, b, a} {
		if got := s.take(); got != want {
			t.Fatalf("took worker %d, want %d", got.pid, want.pid)
		}
	}
	if got := s.take(); got != nil {
		t.Fatalf("took worker %d from an empty set", got.pid)
	}
	if s.len() != 0 {
		t.Fatalf("len %d after taking every worker", s.len())
	}
}

// Every waiter is woken while workers remain: a put wakes one waiter, and a
// waiter that takes a worker passes the wake-up on if others remain.
func TestIdleWorkersWakeEveryWaiter(t *testing.T) {
	s := newIdleWorkers(4)
	const waiters = 4
	got := make(chan *proc, waiters)
	var started sync.WaitGroup
	for range waiters {
		started.Add(1)
		go func() {
			started.Done()
			for {
				if w := s.take(); w != nil {
					got <- w
					return
				}
				<-s.ready
			}
		}()
	}
	started.Wait()
	for i := range waiters {
		s.put(&proc{pid: i + 1})
	}
	seen := map[int]bool{}
	timeout := time.After(time.Minute) // only a lost wake-up takes this long
	for range waiters {
		select {
		case w := <-got:
			if seen[w.pid] {
				t.Fatalf("worker %d taken twice", w.pid)
			}
			seen[w.pid] = true
		case <-timeout:
			t.Fatalf("%d of %d waiters got a worker; the rest were never woken", len(seen), waiters)
		}
	}
}
