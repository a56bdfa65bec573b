package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/internal/ndjson"
	"github.com/loom-plugins/sandbox-cloudrun/internal/progress"
	"github.com/loom-plugins/sandbox-cloudrun/service"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// maxInputsFileBytes bounds what eval -inputs reads: a batch's body is
// bounded by MAX_REQUEST_BYTES on the route, and a file of inputs is held
// whole before anything runs.
const maxInputsFileBytes = 1 << 30

// readInputs reads an NDJSON file of inputs ("-" is stdin), as bulk reads
// its objects (package ndjson): one JSON value a line, each named by its
// source. A file of one line that is one array is one input, as NDJSON has
// it, but more likely an array of the inputs meant: stderr says so.
func readInputs(name string, stdin io.Reader, stderr io.Writer) ([]ndjson.Input, error) {
	r, shown := stdin, "standard input" // its inputs' source is "-"
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r, shown = f, name
	}
	over := fmt.Errorf("%s is over %d bytes, the most eval -inputs reads (bulk reads more)", shown, maxInputsFileBytes)
	inputs, err := ndjson.ReadAll(&cappedReader{r: r, n: maxInputsFileBytes, over: over}, name, ndjson.Limit{Bytes: maxInputsFileBytes})
	if err != nil {
		return nil, err
	}
	if len(inputs) == 1 && inputs[0].Text[0] == '[' {
		fmt.Fprintf(stderr, "eval: note: %s is one line, one JSON array, so it is one input; if its elements are the inputs, jq -c '.[]' file.json > file.ndjson writes them one a line\n", shown)
	}
	return inputs, nil
}

// cappedReader reads r, and fails with over once more than n bytes were
// read.
type cappedReader struct {
	r    io.Reader
	n    int64
	over error
}

func (c *cappedReader) Read(b []byte) (int, error) {
	if c.n < 0 {
		return 0, c.over
	}
	k, err := c.r.Read(b[:min(int64(len(b)), c.n+1)])
	c.n -= int64(k)
	if c.n < 0 {
		return 0, c.over
	}
	return k, err
}

// barInterval is how often eval -inputs' bar is redrawn on a terminal,
// its rate and time left with it.
const barInterval = 200 * time.Millisecond

// evalBatch is eval -inputs: ev's script over each input, as POST
// /v1/evaluations:batch runs them, its lines written to stdout as each is
// known, and each input's evaluation line, with where it was read, logged
// to stderr in the service's format, as the route logs it. Its exit status
// is evalUsage's.
func evalBatch(ctx context.Context, eff *effect.Effect, cfg service.Config, ev spi.Evaluation, lines []ndjson.Input, stdout, stderr io.Writer) error {
	lim := cfg.Limits() // MAX_BATCH_ITEMS is evalCmd's to check, before anything runs
	inputs := make([]jsontext.Text, len(lines))
	for i, l := range lines {
		inputs[i] = l.Text
	}
	p, err := eff.Prepare(ctx, ev)
	if err != nil {
		return fmt.Errorf("eval: %w (retryable: %v)", err, effect.Retryable(err))
	}
	done := progress.NewMeter(len(inputs))
	if width, ok := progress.Terminal(stderr); ok {
		// a person watching: a bar on stderr says how far the inputs are;
		// every other line bound for the terminal clears it first
		bar := progress.NewBar(stderr, done, width, barInterval)
		defer bar.Close()
		stderr = bar.Writer(stderr)
		if _, ok := progress.Terminal(stdout); ok {
			stdout = bar.Writer(stdout)
		}
	}
	level, _ := cfg.Level()
	log := telemetry.NewLogger(stderr, level, cfg.GoogleProject)
	out := bufio.NewWriter(stdout)
	sum, err := answer.Batch(ctx, eff, p, inputs, int(lim.MaxConcurrent), func(it effect.Item) api.BatchLine {
		l := answer.Item(lim, ev, it, "eval was interrupted before this input's run ended; it was not answered, and run again it runs as if for the first time")
		answer.LogItem(ctx, log, "eval", ev, inputs[it.Index], it, l, lines[it.Index].Source.String())
		return l
	}, func(line []byte, l api.BatchLine, more bool) error {
		if _, err := out.Write(line); err != nil {
			return err
		}
		if l.Summary == nil {
			done.Add(1)
		}
		if more {
			return nil
		}
		return out.Flush()
	})
	if err != nil {
		return err
	}
	switch {
	case sum.Problems > 0 || sum.NotRun > 0:
		return exitError{1, fmt.Errorf("eval: %d input(s) had a problem and %d were not run; their lines say why", sum.Problems, sum.NotRun)}
	case sum.Outcomes["ok"] < sum.Items:
		return exitError{3, errSilent} // typed failures, answered above
	}
	return nil
}
