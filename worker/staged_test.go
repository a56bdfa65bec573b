package worker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

func runReq(script, input string, l spi.Limits) spi.RunRequest {
	return spi.RunRequest{Request: spi.Request{Script: script, InputJSON: input, Limits: l}}
}

func runIt(t *testing.T, p *Pool, req spi.RunRequest) string {
	t.Helper()
	rep, err := p.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", req.Script, err)
	}
	return describe(rep.Outcome)
}

// A run the caller names as its next is sent with the one before it and
// begins in the worker the moment that one ends: asked for next, it is
// answered from that run, not sent again, and it starts from a fresh
// instance as every run does (a global the run before set is not there).
func TestTheNextRunIsSentAhead(t *testing.T) {
	p := newPool(t, nil)
	var sent atomic.Int32
	p.dispatched = func(*proc) { sent.Add(1) }
	second := runReq(`[typeof globalThis.seen, input.a * 2]`, `{"a":21}`, generous)
	first := runReq(`globalThis.seen = 1; input.a + 1`, `{"a":41}`, generous)
	first.Next = &second
	if got := runIt(t, p, first); got != `ok 42` {
		t.Fatalf("the first run: %s", got)
	}
	if got := runIt(t, p, second); got != `ok ["undefined",42]` {
		t.Fatalf("the run sent ahead: %s", got)
	}
	if n := sent.Load(); n != 1 {
		t.Errorf("%d runs sent on their own call, want 1: the second was sent ahead", n)
	}
	// a run that is not the one sent ahead is sent as ever
	if got := runIt(t, p, runReq(`input.a - 1`, `{"a":43}`, generous)); got != `ok 42` {
		t.Fatalf("a run after: %s", got)
	}
	if n := sent.Load(); n != 2 {
		t.Errorf("%d runs sent on their own call, want 2", n)
	}
}

// A run sent ahead counts its wall clock from when it begins, after the
// run before it, never from when it was sent: a run of 200 ms under a
// limit of 800 ms, sent ahead of one of 1.5 s, answers ok. (Timed from its
// sending, the worker's own clock or the hard kill, 800 ms + the grace,
// would end it.)
func TestARunSentAheadIsTimedFromItsStart(t *testing.T) {
	p := newPool(t, nil)
	busy := func(ms string) string {
		return `const t = Date.now(); while (Date.now() - t < ` + ms + `) {} 'done'`
	}
	second := runReq(busy("200"), `null`, spi.Limits{WallClock: 800 * time.Millisecond, MemoryBytes: 32 << 20})
	first := runReq(busy("1500"), `null`, generous)
	first.Next = &second
	if got := runIt(t, p, first); got != `ok "done"` {
		t.Fatalf("the first run: %s", got)
	}
	if got := runIt(t, p, second); got != `ok "done"` {
		t.Fatalf("the run sent ahead, 200 ms under a limit of 800 ms after a run of 1.5 s: %s", got)
	}
	if p.Kills() != 0 {
		t.Fatalf("%d workers killed", p.Kills())
	}
}

// A run sent ahead that the caller does not ask for is stopped, and the
// run asked for instead is answered, at once: not after the unasked one's
// wall clock of a minute, and without killing its worker (it stops at its
// next poll).
func TestARunSentAheadAndNotAskedForIsStopped(t *testing.T) {
	p := newPool(t, nil)
	never := runReq(`for (;;) {}`, `null`, spi.Limits{WallClock: time.Minute, MemoryBytes: 32 << 20})
	first := runReq(`1`, `null`, generous)
	first.Next = &never
	if got := runIt(t, p, first); got != `ok 1` {
		t.Fatalf("the first run: %s", got)
	}
	start := time.Now()
	if got := runIt(t, p, runReq(`2`, `null`, generous)); got != `ok 2` {
		t.Fatalf("the run asked for: %s", got)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("answered after %v: it waited for the run nobody asked for", took)
	}
	if p.Kills() != 0 {
		t.Fatalf("%d workers killed; the run sent ahead stops at its poll", p.Kills())
	}
}

// The hard kill of a run ends the run sent ahead of it with its worker;
// asked for next, that run is run anew on another worker, and answered as
// if it were the first.
func TestAHardKillTakesTheRunSentAheadWithIt(t *testing.T) {
	p := newPool(t, nil)
	waitIdle(t, p, 2)
	second := runReq(`input.a + 1`, `{"a":1}`, generous)
	first := runReq(stuckScript, `null`, spi.Limits{WallClock: 50 * time.Millisecond, MemoryBytes: 32 << 20})
	first.Next = &second
	if got := runIt(t, p, first); got != `limit wallClock` {
		t.Fatalf("the stuck run: %s", got)
	}
	if got := runIt(t, p, second); got != `ok 2` {
		t.Fatalf("the run sent ahead of a killed one: %s", got)
	}
	if p.Kills() != 1 {
		t.Fatalf("%d kills, want the stuck run's", p.Kills())
	}
}

// A caller that cancels its run cancels the run sent ahead of it too: the
// worker skips it, and serves the next run at once.
func TestACancelledRunCancelsTheRunSentAhead(t *testing.T) {
	p := newPool(t, nil)
	long := spi.Limits{WallClock: time.Minute, MemoryBytes: 32 << 20}
	second := runReq(`for (;;) {}`, `null`, long)
	first := runReq(`for (;;) {}`, `null`, long)
	first.Next = &second
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := p.Run(ctx, first); err == nil {
		t.Fatal("a cancelled run answered without its context's error")
	}
	start := time.Now()
	if got := runIt(t, p, runReq(`3`, `null`, generous)); got != `ok 3` {
		t.Fatalf("the run after: %s", got)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("answered after %v", took)
	}
	if p.Kills() != 0 {
		t.Fatalf("%d workers killed; both runs stop at their poll", p.Kills())
	}
}

// A run sent ahead that nobody asks for and that does not stop (stuck in
// one native builtin) costs its worker, one grace after it was told to
// stop; the run asked for instead is answered by another worker, never
// with the stuck run's failure. The stuck run begins the moment the run
// before it has answered, so the next call nearly always finds it begun;
// on a busy machine the call can come first, and the worker then skips it
// (also right, and no kill): the case is tried again until the stuck run
// had begun.
func TestAStuckRunSentAheadCostsItsWorkerOnly(t *testing.T) {
	p := newPool(t, nil)
	stuck := runReq(stuckScript, `null`, generous)
	first := runReq(`1`, `null`, generous)
	first.Next = &stuck
	for try := range 10 {
		waitIdle(t, p, 2)
		kills := p.Kills()
		if got := runIt(t, p, first); got != `ok 1` {
			t.Fatalf("the first run: %s", got)
		}
		if got := runIt(t, p, runReq(`2`, `null`, generous)); got != `ok 2` {
			t.Fatalf("the run asked for instead: %s", got)
		}
		switch p.Kills() - kills {
		case 1:
			return // begun and stuck: its worker, and only it, was killed
		case 0:
			t.Logf("try %d: the stuck run was skipped before it began", try+1)
		default:
			t.Fatalf("%d kills for one stuck run", p.Kills()-kills)
		}
	}
	t.Fatal("in 10 tries the stuck run sent ahead never began before the next call")
}

// A pool that closes while a worker holds a run sent ahead, begun and
// long, does not wait for it: the worker stops what it holds once its
// channel closes, and exits by itself, no kill needed.
func TestCloseDoesNotWaitForARunSentAhead(t *testing.T) {
	// a budget that lets the run go on for minutes: only its wall clock
	// (a minute) or the channel's closing ends it
	p := newPool(t, func(o *Options) { o.Engine.CPUBudget = 1 << 40 })
	long := runReq(`for (;;) {}`, `null`, spi.Limits{WallClock: time.Minute, MemoryBytes: 32 << 20})
	first := runReq(`1`, `null`, generous)
	first.Next = &long
	if got := runIt(t, p, first); got != `ok 1` {
		t.Fatalf("the first run: %s", got)
	}
	start := time.Now()
	ctx, cancelClose := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelClose()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// a minute's run held would keep its worker past the 20 s given
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("Close took %v", took)
	}
	if p.Kills() != 0 {
		t.Fatalf("%d workers killed", p.Kills())
	}
}
