package handler

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// batch serves POST /v1/evaluations:batch (docs/batch.md): one script by
// reference, read and verified once, run over each input in a fresh run
// of its own, as /v1/evaluations would run that input alone. The answer is
// a stream of lines (application/x-ndjson), one per input in the inputs'
// order as each is known, then a summary; the handler holds at most a
// window of answers, as many as runs go at once.
//
// A request refused, or a script that cannot be read, is answered as
// /v1/evaluations answers it, before any line; a script the store does not
// have is each input's answer (scriptMissing), as it would be alone. Once the lines have begun,
// the status is 200: each input's own problem is its line's, and when the
// request's deadline passes the inputs whose runs did not end are each
// answered not run, and the summary still ends the stream. A client that
// goes away ends the batch: its runs are stopped, and the response is
// aborted, never ended as if whole.
func (s *server) batch(w http.ResponseWriter, r *http.Request) {
	body, ok := s.requestBody(w, r)
	if !ok {
		return
	}
	ev, inputs, err := api.DecodeBatchRequest(body, s.lim)
	if err != nil {
		var refused *api.Problem
		if !errors.As(err, &refused) {
			refused = api.NewProblem(api.ProblemInternal, "internal error").WithCause(err)
		}
		writeProblem(w, r, refused)
		return
	}
	ctx := r.Context()
	p, err := s.cfg.Effect.Prepare(ctx, ev)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	parallel := 1
	if p.Failure() == nil { // else the script is not stored: each input's answer, and nothing runs
		var release func()
		parallel, release = s.freeSlots()
		defer release()
	}

	h := w.Header()
	h.Set("Content-Type", api.BatchContentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_, err = answer.Batch(ctx, s.cfg.Effect, p, inputs, parallel, func(it effect.Item) api.BatchLine {
		l := s.batchLine(ctx, ev, it)
		s.logItem(ctx, ev, inputs[it.Index], it, l)
		return l
	}, func(line []byte, _ api.BatchLine, more bool) error {
		if _, err := w.Write(line); err != nil {
			return err
		}
		if more { // sent with the next: one write for a burst of lines
			return nil
		}
		return rc.Flush()
	})
	if err != nil {
		// the lines could not be delivered: the client went away
		if rec := recordFrom(ctx); rec != nil {
			rec.mu.Lock()
			rec.clientGone = true
			rec.mu.Unlock()
		}
		panic(http.ErrAbortHandler)
	}
}

// freeSlots takes, without waiting, the concurrency gate's free slots for
// a batch, which holds one already: its runs go at most that many at once
// (MaxConcurrent when the instance is idle), and a request that comes
// while they do is refused at once, 429, as ever. release gives them back.
func (s *server) freeSlots() (n int, release func()) {
	n = 1
	for int64(n) < s.lim.MaxConcurrent {
		select {
		case s.gate <- struct{}{}:
			n++
			continue
		default:
		}
		break
	}
	return n, func() {
		for range n - 1 {
			<-s.gate
		}
	}
}

// batchLine is an input's line on the batch route.
func (s *server) batchLine(ctx context.Context, ev spi.Evaluation, it effect.Item) api.BatchLine {
	detail := ""
	if it.NotRun {
		detail = s.notRunDetail(ctx)
	}
	l := answer.Item(s.lim, ev, it, detail)
	if l.Problem != nil {
		l.Problem.Instance = telemetry.RequestIDFrom(ctx)
	}
	return l
}

// notRunDetail says why a batch's input was not run, or not to its end.
func (s *server) notRunDetail(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), errRequestTimeout) {
		return fmt.Sprintf("the server's request timeout of %v passed before this input's run ended; it was not answered, and sent again it runs as if for the first time", s.lim.RequestTimeout)
	}
	return "the batch stopped before this input's run ended; it was not answered, and sent again it runs as if for the first time"
}

// logItem writes the evaluation line of one input of a batch, as the
// request of that input alone would have (its route the batch's), with its
// index; its engine fault and its metrics.
func (s *server) logItem(ctx context.Context, ev spi.Evaluation, input []byte, it effect.Item, l api.BatchLine) {
	line, rec, level := answer.ItemEvaluation(routeBatch, ev, input, it, l)
	s.logEvaluation(ctx, level, line, rec, it.Result.Call.Duration())
}
