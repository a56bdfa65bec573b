package effect

import (
	"context"
	"errors"
	"iter"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Prepared is one evaluation's script, admitted, read and verified once,
// for runs over many inputs (RunPrepared, Batch): what every run of the
// same script under the same limits shares.
type Prepared struct {
	ev      spi.Evaluation // its limits clamped; its input is each run's own
	script  string
	timing  spi.Timing
	failure error // the typed failure of a script not stored; see Failure
	// Fetch and Verify are when the script was read from the store and
	// checked against its reference: zero for a script sent by value.
	Fetch, Verify Interval
	// ScriptBytes is the length of the script that was fetched.
	ScriptBytes int
}

// Failure is the typed failure (a *spi.Failure, scriptMissing) that every run
// of p answers without running, as Run would answer it: the store does not
// have the script. It is nil when the script was read.
func (p *Prepared) Failure() error { return p.failure }

// Limits are the limits every run of p is run under: its evaluation's, a
// limit above the effect's maximum at the maximum.
func (p *Prepared) Limits() spi.Limits { return p.ev.Limits }

// Prepare does, once, what Run does before a run that does not depend on
// the input: refuses what no run of ev can have, runs a limit above its
// maximum at the maximum, and reads the script, fetched by its reference,
// verified and bounded, or as it was sent. ev's Input is ignored. A script
// the store does not have is no error: it is each run's answer, a typed
// failure as Run's is (Failure). Prepare's errors are Run's for those
// steps, of a script that cannot be read: an error of the *NotRunError
// kinds (too large, unreadable, the store unavailable), and
// ErrInvalidInput for a field no run can have.
func (e *Effect) Prepare(ctx context.Context, ev spi.Evaluation) (*Prepared, error) {
	if err := e.admit(ev); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, notRun(Stopped, ev.ScriptRef, cancelled(ctx, true))
	}
	ev.Limits = e.clamp(ev.Limits)
	ev.Input = nil
	p := &Prepared{ev: ev, script: ev.Script, timing: e.caller.timing(ev.Limits.WallClock)}
	if !ev.ScriptRef.IsZero() {
		var res Result
		b, err := e.fetch(ctx, ev.ScriptRef, p.timing, &res)
		p.Fetch, p.Verify = res.Fetch, res.Verify
		var missing *spi.Failure
		switch {
		case errors.As(err, &missing):
			p.failure = err
		case err != nil:
			return nil, err
		}
		p.script, p.ScriptBytes = string(b), len(b)
	}
	return p, nil
}

// RunPrepared is Run of the prepared evaluation with input as its input:
// a fresh run under its limits, answered as Run answers it (the answers no
// retry can change included), except that the script is not read again:
// its Result's Fetch, Verify and usage phases of them are zero (they are
// the Prepared's), but for a script not stored, whose answer (Failure)
// carries the one read that found so, as Run's carries its read.
func (e *Effect) RunPrepared(ctx context.Context, p *Prepared, input jsontext.Text) (Result, error) {
	return e.runPrepared(ctx, p, input, nil)
}

// runPrepared is RunPrepared, naming to the backend the run of next (when
// not nil) as the one it will ask for after this one, when a run of next
// is what it would ask for: not when next is answered without a run.
func (e *Effect) runPrepared(ctx context.Context, p *Prepared, input, next jsontext.Text) (Result, error) {
	ev := p.ev
	ev.Input = input
	return e.runWith(ctx, ev, func(r *running) (Result, error) {
		var res Result
		res.Usage.MemoryLimitBytes = ev.Limits.MemoryBytes
		res.ScriptBytes = p.ScriptBytes
		if settled, err := e.settle(ev, &res); settled {
			return res, err
		}
		if p.failure != nil {
			res.Fetch, res.Verify = p.Fetch, p.Verify
			res.Usage.Fetch, res.Usage.Verify = p.Fetch.Duration(), p.Verify.Duration()
			return res, p.failure
		}
		var then *spi.RunRequest
		if next != nil {
			nev := p.ev
			nev.Input = next
			if settled, _ := e.settle(nev, &Result{}); !settled {
				req := runRequest(nev, p.script)
				then = &req
			}
		}
		return e.callAndDecide(ctx, ev, p.script, p.timing, r, res, then)
	})
}

// Item is one input's answer in a batch: its index among the inputs and
// what RunPrepared answered for it alone; or, NotRun, that the batch
// stopped before the input's run could end (the batch's context ended, or
// its answers could no longer be delivered), so that the input can be sent
// again as it was.
type Item struct {
	Index  int
	Result Result
	Err    error
	NotRun bool
	// NextReady says that the next input's Item had come when this one was
	// yielded: a caller that streams the answers may hold this one's to
	// send with it, and so send a burst of answers at once.
	NextReady bool
}

// Batch runs the prepared evaluation over each input, each in a run of its
// own (RunPrepared), at most parallel at once (at least one), and yields
// each input's Item in the inputs' order. Each of parallel runners takes
// the next input as soon as it has handed over its last answer, so the
// next input runs while the caller is still busy with an earlier answer.
// With one run at a time, each run names the next input's to the backend
// (spi.RunRequest.Next), which may start it the moment the run before it
// ends, without waiting for the call. At most 2×parallel inputs
// (heldPerSlot) are between their run's start and the caller's return from
// their answer, so a batch of any length holds a bounded window of
// answers, a run that ends before an earlier one waiting for it within
// that window. Each iteration runs the batch anew.
//
// When ctx ends, the inputs not yet started are not run, and they and the
// runs it stopped are yielded NotRun; an answer that ended before is
// yielded as it is. When the loop stops early (the answers cannot be
// delivered), nothing more is yielded, the runs in progress are stopped,
// and the iteration returns once they have.
func (e *Effect) Batch(ctx context.Context, p *Prepared, inputs []jsontext.Text, parallel int) iter.Seq[Item] {
	return func(yield func(Item) bool) {
		parallel := max(parallel, 1)
		bctx, stop := context.WithCancel(ctx)
		defer stop()
		type answer struct {
			Item
			started bool // holds a place in the window until it is yielded
		}
		answers := make([]chan answer, len(inputs))
		for i := range answers {
			answers[i] = make(chan answer, 1)
		}
		// An input takes its place in the window as it is taken, in turn,
		// so the window holds inputs in their order: a runner waiting for
		// a place holds the first input not yet started, and every input
		// before it will be yielded, which frees a place. The turn is a
		// channel rather than a sync.Mutex so that a runner waiting for it
		// can be seen, as every other wait of the batch, on a channel.
		window := make(chan struct{}, heldPerSlot*parallel) // started, not yet yielded
		turn, next := make(chan struct{}, 1), 0
		take := func() (i int, run bool) {
			turn <- struct{}{}
			defer func() { <-turn }()
			i, next = next, next+1
			if i >= len(inputs) {
				return i, false
			}
			select {
			case window <- struct{}{}:
			case <-bctx.Done():
				return i, false
			}
			if bctx.Err() != nil { // taken in the same moment: given back
				<-window
				return i, false
			}
			return i, true
		}
		// A runner starts its next input itself, at once, rather than
		// handing it to another goroutine: its answer has just readied the
		// caller's loop, which the scheduler would run first on a single
		// processor (the server's), and the worker would wait for the
		// caller's work on the answer before it got its next input.
		for range parallel {
			go func() {
				for {
					i, run := take()
					switch {
					case i >= len(inputs):
						return
					case !run:
						answers[i] <- answer{Item: Item{Index: i, NotRun: true}}
						continue
					}
					// one run at a time: the runner's next input is
					// this one's successor, which the backend may start
					// the moment this run ends
					var next jsontext.Text
					if parallel == 1 && i+1 < len(inputs) {
						next = inputs[i+1]
					}
					res, err := e.runPrepared(bctx, p, inputs[i], next)
					answers[i] <- answer{Item: Item{Index: i, Result: res, Err: err, NotRun: stoppedBy(bctx, err)}, started: true}
				}
			}()
		}
		done := false
		for i := range answers {
			a := <-answers[i]
			a.NextReady = i+1 < len(answers) && len(answers[i+1]) > 0
			if !done && !yield(a.Item) {
				done = true
				stop()
			}
			// drained once done: every run has returned when the
			// iteration does
			if a.started {
				<-window
			}
		}
	}
}

// heldPerSlot is how many inputs of a batch may be between their run's
// start and the caller's return from their answer, per run allowed at
// once: the one running and the one whose answer the caller has, so that
// a slot's next run overlaps the caller's work on its last answer.
const heldPerSlot = 2

// stoppedBy reports whether err is a run's end by ctx: a cancellation,
// once ctx has ended, rather than the run's own answer.
func stoppedBy(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}
