package effect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// adder answers input.x + 1 for an input {"x": n}, after wait(n) (which
// may block on the run's context), counting the runs in progress.
type adder struct {
	wait            func(ctx context.Context, n int) error
	running, peak   atomic.Int32
	calls           atomic.Int32
	mu              sync.Mutex
	scriptsReceived map[string]int
}

func (a *adder) Capabilities() spi.Capabilities { return safeCaps }

func (a *adder) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	a.calls.Add(1)
	n := a.running.Add(1)
	defer a.running.Add(-1)
	for p := a.peak.Load(); n > p && !a.peak.CompareAndSwap(p, n); p = a.peak.Load() {
	}
	a.mu.Lock()
	if a.scriptsReceived == nil {
		a.scriptsReceived = map[string]int{}
	}
	a.scriptsReceived[req.Script]++
	a.mu.Unlock()
	var in struct{ X int }
	if err := json.Unmarshal([]byte(req.InputJSON), &in); err != nil {
		return spi.Outcome{}, err
	}
	if a.wait != nil {
		if err := a.wait(ctx, in.X); err != nil {
			return spi.Outcome{}, err
		}
	}
	if in.X < 0 {
		return spi.Threw(ptr("RangeError"), "negative "+strconv.Itoa(in.X)), nil
	}
	return spi.OK([]byte(strconv.Itoa(in.X + 1))), nil
}

func inputs(n int) []jsontext.Text {
	in := make([]jsontext.Text, n)
	for i := range in {
		in[i] = jsontext.Text(fmt.Sprintf(`{"x":%d}`, i))
	}
	return in
}

func prepared(t *testing.T, e *effect.Effect) *effect.Prepared {
	t.Helper()
	p, err := e.Prepare(context.Background(), spi.Evaluation{ScriptRef: testRef, Limits: spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 64 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// One script, many inputs: fetched and verified once, each input its own
// run, the answers in the inputs' order whatever order the runs end in,
// never more runs at once than asked for, and a run's own failure is its
// answer while the batch goes on.
func TestBatchAnswersInOrderFromOneFetch(t *testing.T) {
	reader := newReader(testScript)
	a := &adder{wait: func(ctx context.Context, n int) error {
		time.Sleep(time.Duration((n*7)%5) * time.Millisecond) // later inputs often end first
		return nil
	}}
	e := mustNew(t, reader, a, effect.Options{})
	in := inputs(40)
	in[13] = jsontext.Text(`{"x":-13}`)
	var got []effect.Item
	for it := range e.Batch(context.Background(), prepared(t, e), in, 4) {
		got = append(got, it)
	}
	if len(got) != len(in) {
		t.Fatalf("%d answers for %d inputs", len(got), len(in))
	}
	for i, it := range got {
		switch {
		case it.Index != i || it.NotRun:
			t.Errorf("answer %d: index %d, not run %v", i, it.Index, it.NotRun)
		case i == 13:
			if f := asFailure(t, it.Err); f.Channel != spi.ChannelScriptError || f.Message != "negative -13" {
				t.Errorf("answer 13: %+v", f)
			}
		case it.Err != nil || string(it.Result.Value) != strconv.Itoa(i+1):
			t.Errorf("answer %d: %s, %v", i, it.Result.Value, it.Err)
		}
	}
	if n := reader.Calls(); n != 1 {
		t.Errorf("the script was read %d times for one batch", n)
	}
	if n := a.calls.Load(); n != int32(len(in)) {
		t.Errorf("%d runs for %d inputs", n, len(in))
	}
	if p := a.peak.Load(); p > 4 || p < 2 {
		t.Errorf("at most %d runs at once, asked for 4", p)
	}
	if len(a.scriptsReceived) != 1 || a.scriptsReceived[testScript] != len(in) {
		t.Errorf("the backend received scripts %v", a.scriptsReceived)
	}
}

// A slow first input holds the window: while its answer is awaited, no
// more inputs start than twice the batch's parallelism (the runs, and one
// answer held per run), so the answers held stay bounded however long the
// batch is. In a synctest bubble the check waits until every goroutine of
// the batch is blocked, so a wrong start has happened by then however slow
// the machine.
func TestBatchHoldsABoundedWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		a := &adder{wait: func(ctx context.Context, n int) error {
			if n == 0 {
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}}
		e := mustNew(t, newReader(testScript), a, effect.Options{})
		p := prepared(t, e)
		done := make(chan struct{})
		var emitted atomic.Int32
		go func() {
			defer close(done)
			for range e.Batch(context.Background(), p, inputs(100), 3) {
				emitted.Add(1)
			}
		}()
		// the runs of the other two slots end at once, and two more after
		// them, held behind the first; nothing else may start
		synctest.Wait()
		if n, m := a.calls.Load(), emitted.Load(); n != 6 || m != 0 {
			t.Errorf("while the first run holds: %d runs started, %d answers emitted; want 6 and 0", n, m)
		}
		close(release)
		<-done
		if n := emitted.Load(); n != 100 {
			t.Fatalf("%d answers emitted", n)
		}
	})
}

// A slot's next run does not wait for the caller: while the caller is
// still busy with an answer (here: it does not come back for the next),
// the next input runs, one at a time as asked, and no input after it
// starts until the caller takes an answer.
func TestBatchRunsTheNextInputWhileAnAnswerIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &adder{}
		e := mustNew(t, newReader(testScript), a, effect.Options{})
		p := prepared(t, e)
		next := make(chan struct{})
		done := make(chan struct{})
		var got []int
		go func() {
			defer close(done)
			for it := range e.Batch(context.Background(), p, inputs(5), 1) {
				got = append(got, it.Index)
				<-next
			}
		}()
		for i := range 5 {
			synctest.Wait()
			want := int32(min(i+2, 5)) // the answer held, and the run after it
			if n := a.calls.Load(); n != want {
				t.Errorf("while the caller holds answer %d: %d runs started, want %d", i, n, want)
			}
			next <- struct{}{}
		}
		<-done
		if p := a.peak.Load(); p != 1 {
			t.Errorf("%d runs at once, asked for 1", p)
		}
		if fmt.Sprint(got) != "[0 1 2 3 4]" {
			t.Errorf("answers %v, want the inputs' order", got)
		}
	})
}

// On one processor, as the server runs its Go code, the runner that hands
// over an answer starts the next input itself, before the caller's loop
// takes the answer: the next run is on its way to the worker while the
// caller writes the line, not after it. Handing the next input to another
// goroutine instead would queue it behind the caller's loop, which the
// answer had just readied, and every input would wait for the line before
// it (what the bound below fails on: none would start first). The race
// detector shuffles the scheduler's order, so the test runs without it.
func TestBatchStartsTheNextInputBeforeTheCallerTakesTheAnswer(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector shuffles the order of runnable goroutines")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var mu sync.Mutex
	var events []string
	record := func(e string) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	a := &adder{wait: func(_ context.Context, n int) error {
		record(fmt.Sprint("start ", n))
		return nil
	}}
	e := mustNew(t, newReader(testScript), a, effect.Options{})
	p := prepared(t, e)
	const n = 50
	for it := range e.Batch(context.Background(), p, inputs(n), 1) {
		record(fmt.Sprint("answer ", it.Index))
	}
	at := map[string]int{}
	for i, e := range events {
		at[e] = i
	}
	early := 0
	for k := range n - 1 {
		if at[fmt.Sprint("start ", k+1)] < at[fmt.Sprint("answer ", k)] {
			early++
		}
	}
	// all of them, but for a preemption of the scheduler's (a goroutine
	// that held the processor for 10 ms) on a busy machine
	if early < (n-1)/2 {
		t.Errorf("%d of %d inputs started before the caller took the answer before them, want nearly all: %v", early, n-1, events)
	}
}

// An answer says whether the next has come already, so that a caller that
// streams them can send a burst at once: here the first run ends last,
// after the three others, so each answer but the last is followed by one
// that is ready.
func TestBatchSaysWhenTheNextAnswerIsReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		a := &adder{wait: func(ctx context.Context, n int) error {
			if n == 0 {
				<-release
			}
			return nil
		}}
		e := mustNew(t, newReader(testScript), a, effect.Options{})
		p := prepared(t, e)
		got := make(chan []bool)
		go func() {
			var ready []bool
			for it := range e.Batch(context.Background(), p, inputs(4), 4) {
				ready = append(ready, it.NextReady)
			}
			got <- ready
		}()
		synctest.Wait() // the three later runs have ended
		close(release)
		if ready := <-got; fmt.Sprint(ready) != "[true true true false]" {
			t.Errorf("next ready %v, want [true true true false]", ready)
		}
	})
}

// When the batch's context ends, nothing is lost: every input is answered
// once, the ones that ran with their answers and the others not run, the
// runs in progress stopped, and Batch returns once they have.
func TestBatchStoppedReportsWhatDidNotRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := &adder{wait: func(ctx context.Context, n int) error {
		if n >= 10 {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}}
	e := mustNew(t, newReader(testScript), a, effect.Options{})
	var got []effect.Item
	for it := range e.Batch(ctx, prepared(t, e), inputs(50), 2) {
		got = append(got, it)
		if it.Index == 9 {
			go func() { time.Sleep(20 * time.Millisecond); cancel() }()
		}
	}
	if len(got) != 50 {
		t.Fatalf("%d answers for 50 inputs", len(got))
	}
	for i, it := range got {
		wantRun := i < 10
		if it.Index != i || it.NotRun == wantRun || wantRun && string(it.Result.Value) != strconv.Itoa(i+1) {
			t.Errorf("answer %d: index %d, not run %v, value %s, err %v", i, it.Index, it.NotRun, it.Result.Value, it.Err)
		}
	}
	if n := a.running.Load(); n != 0 {
		t.Errorf("%d runs still in progress after the loop returned", n)
	}
	if n := a.calls.Load(); n > 12 {
		t.Errorf("%d runs started; the batch went on after it stopped", n)
	}
}

// When the answers cannot be delivered, the loop over them stops, and so
// does the batch: nothing more is yielded, and no run is left going once
// the loop has returned.
func TestBatchStopsWhenTheLoopStops(t *testing.T) {
	a := &adder{wait: func(ctx context.Context, n int) error {
		select {
		case <-time.After(time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	e := mustNew(t, newReader(testScript), a, effect.Options{})
	emitted := 0
	for it := range e.Batch(context.Background(), prepared(t, e), inputs(200), 4) {
		emitted++
		if it.Index == 5 {
			break // the client left
		}
	}
	if emitted != 6 {
		t.Fatalf("%d answers yielded; want 6, the loop stopping at the sixth", emitted)
	}
	if n := a.running.Load(); n != 0 {
		t.Errorf("%d runs still in progress after the loop returned", n)
	}
	if n := a.calls.Load(); n > 6+2*4 {
		t.Errorf("%d runs started for 6 answers delivered", n)
	}
}

// A script the store does not have is each run's answer, as Run answers
// it for that input alone (the same failure, the read that found so and
// the memory limit in its usage, and an input over the maximum answered
// first), with no run; one that cannot be read is the batch's answer
// before any run, as it would be of a single evaluation. Each run answers
// what no retry can change (an input over the maximum) as Run does.
func TestPrepareAndTheAnswersOfOneInput(t *testing.T) {
	a := &adder{}
	e := mustNew(t, newReader(), a, effect.Options{MaxInputBytes: 16, MaxMemoryBytes: 32 << 20})
	ev := spi.Evaluation{ScriptRef: testRef, Limits: spi.Limits{WallClock: time.Second, MemoryBytes: 64 << 20}}
	p, err := e.Prepare(context.Background(), ev)
	if err != nil {
		t.Fatalf("Prepare of a missing script: %v", err)
	}
	var nr *effect.NotRunError
	if !errors.As(p.Failure(), &nr) || nr.Reason != effect.ScriptNotFound || a.calls.Load() != 0 {
		t.Fatalf("Prepare of a missing script: %v, %d runs", p.Failure(), a.calls.Load())
	}
	for _, in := range []string{`{"x":1}`, `{"x":1,"pad":"0123456789"}`} {
		res, err := e.RunPrepared(context.Background(), p, jsontext.Text(in))
		ev.Input = jsontext.Text(in)
		alone, aloneErr := e.Run(context.Background(), ev)
		f, af := asFailure(t, err), asFailure(t, aloneErr)
		if f.Channel != af.Channel || res.Usage.MemoryLimitBytes != alone.Usage.MemoryLimitBytes || res.Usage.MemoryLimitBytes != 32<<20 ||
			(res.Usage.Fetch == 0) != (alone.Usage.Fetch == 0) || res.Fetch.Start.IsZero() != alone.Fetch.Start.IsZero() {
			t.Errorf("input %s: a prepared run answers %+v with %+v; alone, %+v with %+v", in, f, res.Usage, af, alone.Usage)
		}
	}
	if a.calls.Load() != 0 {
		t.Errorf("%d runs of a script not stored", a.calls.Load())
	}
	down := newReader()
	down.get = func(context.Context, contentref.Ref) ([]byte, error) { return nil, contentref.ErrUnavailable }
	e = mustNew(t, down, a, effect.Options{})
	if p, err := e.Prepare(context.Background(), ev); !errors.As(err, &nr) || nr.Reason != effect.StoreUnavailable || p != nil {
		t.Errorf("Prepare of a script the store cannot give: %v, %v", p, err)
	}

	e = mustNew(t, newReader(testScript), a, effect.Options{MaxInputBytes: 16})
	p = prepared(t, e)
	res, err := e.RunPrepared(context.Background(), p, jsontext.Text(`{"x":1}`))
	if err != nil || string(res.Value) != "2" {
		t.Fatalf("a run: %s, %v", res.Value, err)
	}
	if res.Usage.Fetch != 0 || res.Usage.Verify != 0 || p.Fetch.Start.IsZero() || p.ScriptBytes != len(testScript) {
		t.Errorf("the read is the prepared script's, not the run's: run %+v, prepared %+v", res.Usage, p)
	}
	_, err = e.RunPrepared(context.Background(), p, jsontext.Text(`{"x":1,"pad":"0123456789"}`))
	if f := asFailure(t, err); f.Channel != spi.ChannelInputTooLarge {
		t.Errorf("an input over the maximum: %+v", f)
	}
	if n := a.calls.Load(); n != 1 {
		t.Errorf("%d runs; the input over the maximum must not run", n)
	}
}

// nextRecorder is a Reporter that records, for each run, the input of the
// run its caller named as next (spi.RunRequest.Next), or "-" for none.
type nextRecorder struct {
	adder
	nexts []string
}

func (n *nextRecorder) Run(ctx context.Context, req spi.RunRequest) (spi.Report, error) {
	next := "-"
	if req.Next != nil {
		next = req.Next.InputJSON
	}
	n.mu.Lock()
	n.nexts = append(n.nexts, next)
	n.mu.Unlock()
	o, err := n.Evaluate(ctx, req.Request)
	return spi.Report{Outcome: o}, err
}

// A batch of one run at a time names, in each run's request, the run it
// asks for next, so that a backend can start it the moment this one ends;
// the last names none, nor does one before an input that no run can have
// (too large: answered without a run, here the third), nor a batch of runs
// in parallel (which runner takes which input is not known in advance).
func TestBatchNamesTheNextRun(t *testing.T) {
	n := &nextRecorder{}
	e := mustNew(t, newReader(testScript), n, effect.Options{MaxInputBytes: 16})
	p := prepared(t, e)
	in := inputs(4)
	in[2] = jsontext.Text(`{"x":2,"pad":"0123456789"}`) // over 16 bytes
	for range e.Batch(context.Background(), p, in, 1) {
	}
	if got, want := fmt.Sprint(n.nexts), `[{"x":1} - -]`; got != want {
		t.Errorf("the next runs named: %s, want %s", got, want)
	}
	n.nexts = nil
	for range e.Batch(context.Background(), p, inputs(4), 2) {
	}
	if got, want := fmt.Sprint(n.nexts), `[- - - -]`; got != want {
		t.Errorf("in parallel, the next runs named: %s, want %s", got, want)
	}
}
