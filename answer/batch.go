package answer

import (
	"context"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Item is a batch input's line (docs/batch.md): its answer as POST
// /v1/evaluations would give it alone, ev being the batch's evaluation and
// lim the limits it was run under; the problem that route would answer it
// with (Problem); or, for an input not run, notRun, which says why.
func Item(lim api.Limits, ev spi.Evaluation, it effect.Item, notRun string) api.BatchLine {
	l := api.BatchLine{Index: it.Index}
	if it.NotRun {
		l.NotRun = notRun
		return l
	}
	var logs *string
	if ev.CaptureLogs {
		logs = &it.Result.Logs
	}
	a, err := api.EvaluationResult(it.Result.Value, logs, it.Result.Usage, it.Err)
	if err != nil {
		l.Problem = Problem(lim, err)
		return l
	}
	l.Answer = &a
	return l
}

// Batch runs a batch as POST /v1/evaluations:batch does and hands write
// its lines, each encoded (with its newline) and as it is: each input's,
// in the inputs' order, made by line from the input's Item, then the
// summary of them all, which it returns. more says that the next line is
// ready too (Item.NextReady): a writer that streams may hold this one to
// send with it, and must send what it holds when more is false. p is the
// script Effect.Prepare read (or found not stored: each input's answer is
// then its Failure, as it would be alone), run over the inputs at most
// parallel at once (Effect.Batch). An error of write ends the batch, its
// runs stopped, and is returned.
func Batch(ctx context.Context, eff *effect.Effect, p *effect.Prepared, inputs []jsontext.Text, parallel int,
	line func(effect.Item) api.BatchLine, write func(encoded []byte, l api.BatchLine, more bool) error) (api.BatchSummary, error) {
	sum := api.BatchSummary{Outcomes: map[string]int{}}
	var buf []byte
	put := func(l api.BatchLine, more bool) error {
		var err error
		if buf, err = api.AppendBatchLine(buf[:0], l); err != nil {
			return err
		}
		return write(buf, l, more)
	}
	for it := range eff.Batch(ctx, p, inputs, parallel) {
		l := line(it)
		sum.Add(l)
		// the summary follows the last input's line at once
		if err := put(l, it.NextReady || it.Index == len(inputs)-1); err != nil {
			return sum, err
		}
	}
	// the batch read the script once: a line of a script not stored says
	// that read, as it would alone, and the summary says it once
	sum.Usage.Fetch, sum.Usage.Verify = p.Fetch.Duration(), p.Verify.Duration()
	return sum, put(api.BatchLine{Summary: &sum}, false)
}
