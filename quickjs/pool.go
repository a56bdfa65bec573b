package quickjs

import (
	"context"
	"runtime"
	"time"
)

// The pool of instances ready for a run: fill keeps it full, resetting
// the instances whose run ended; take draws from it; discard hands a used
// one back.

// fill keeps the pool full of instances ready for a run, resetting the
// ones whose run ended and building new ones, until the engine closes.
// With more than one processor it keeps an OS thread of its own (the
// goroutine never unlocks it, so the thread ends with it): the thread that
// delivered a result then has nothing left to do, and a caller woken onto
// the same core runs at once instead of behind the reset of a used
// instance. On one processor (a worker) it does not: there the reset needs
// the one processor whatever thread runs it, and handing the processor to
// a locked thread and back costs two thread wake-ups a run, which a worker
// serving a batch's runs back to back pays on every input (RATIONALE.md,
// "A worker's run path").
func (e *Engine) fill() {
	defer e.filling.Done()
	if runtime.GOMAXPROCS(0) > 1 {
		runtime.LockOSThread()
	}
	backoff := 10 * time.Millisecond
	for {
		select {
		case <-e.stop:
			return
		default:
		}
		e.recycleUsed()
		if len(e.pool) == cap(e.pool) {
			select {
			case in := <-e.used:
				e.recycle(in)
			case <-e.stop:
				return
			}
			continue
		}
		// While the pool still holds an instance, build the next one only
		// when no run is in progress: on two cores a build beside a run
		// slows the run and its response. A used instance is reset at
		// once: that costs a fraction of a build.
		for len(e.pool) > 0 && e.running() > 0 {
			select {
			case in := <-e.used:
				e.recycle(in)
			case <-e.runEnded:
			case <-e.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		if len(e.pool) == cap(e.pool) {
			continue
		}
		in, err := newInstance(context.Background(), e.rt, e.compiled, e.mem, e.image)
		if err != nil {
			e.cfg.logger.Error("quickjs: pre-building an instance failed", "err", err)
			select {
			case <-e.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		e.pooled(in)
	}
}

// pooled puts a ready instance in the pool, or closes it when the pool is
// full (fill is its one producer, so only a closing engine's is).
func (e *Engine) pooled(in *instance) {
	select {
	case e.pool <- in:
	default:
		in.close()
	}
}

// recycle resets an instance whose run ended to the set-up image and pools
// it; one that cannot serve again is closed.
func (e *Engine) recycle(in *instance) {
	if e.renew(in) {
		e.pooled(in)
	}
}

// renew resets an instance whose run ended to the set-up image, or closes
// it when it cannot serve again (false).
func (e *Engine) renew(in *instance) bool {
	deep := e.image.wentDeep(in)
	if e.closed.Load() || !e.image.reset(in) {
		in.close()
		return false
	}
	if deep {
		in.newCalls()
	}
	e.recycled.Add(1)
	return true
}

// discard hands an instance whose run ended to fill, to be reset and
// pooled, or closes it now when there is no pool or fill is behind; an
// instance whose guest's call failed (a trap, a termination) is closed:
// its state is not the shim's to vouch for.
func (e *Engine) discard(in *instance, failed bool) {
	if failed || e.used == nil {
		in.close()
		return
	}
	select {
	case e.used <- in:
	default:
		in.close()
	}
}

// recycleUsed resets the instances handed to fill so far.
func (e *Engine) recycleUsed() {
	for {
		select {
		case in := <-e.used:
			e.recycle(in)
		default:
			return
		}
	}
}

// closeUsed closes the instances handed to fill so far.
func (e *Engine) closeUsed() {
	for {
		select {
		case in := <-e.used:
			in.close()
		default:
			return
		}
	}
}

// take returns an instance that holds the set-up image: a pooled one when
// the pool has one, else one built now.
func (e *Engine) take(ctx context.Context) (*instance, error) {
	select {
	case in := <-e.pool:
		return in, nil
	default:
	}
	// fill is behind (on one processor it runs only when the runs leave it
	// a turn): a used instance reset here costs a fraction of a build
	for {
		select {
		case in := <-e.used:
			if e.renew(in) {
				return in, nil
			}
		default:
			return newInstance(ctx, e.rt, e.compiled, e.mem, e.image)
		}
	}
}
