package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/service"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// maxInputsFileBytes bounds what eval -inputs reads: a batch's body is
// bounded by MAX_REQUEST_BYTES on the route, and a file of inputs is read
// whole before anything runs.
const maxInputsFileBytes = 1 << 30

// readInputs reads an NDJSON file of inputs ("-" is stdin): one JSON value
// a line, a final newline optional. A line that is empty or not one JSON
// value is an error naming it.
func readInputs(name string, stdin io.Reader) ([]jsontext.Text, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInputsFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxInputsFileBytes {
		return nil, fmt.Errorf("%s is over %d bytes", name, maxInputsFileBytes)
	}
	var inputs []jsontext.Text
	n := 0
	for line := range bytes.Lines(data) {
		n++
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			return nil, fmt.Errorf("%s, line %d: an empty line; each line is one input, a JSON value", name, n)
		}
		if err := jsontext.Validate(line); err != nil {
			return nil, fmt.Errorf("%s, line %d: not one JSON value: %w", name, n, err)
		}
		inputs = append(inputs, jsontext.Text(line))
	}
	return inputs, nil
}

// evalBatch is eval -inputs: ev's script over each input, read from name,
// as POST /v1/evaluations:batch runs them, its lines written to stdout as
// each is known, and each input's evaluation line, with where it was read,
// logged to stderr in the service's format, as the route logs it. Its exit
// status is evalUsage's.
func evalBatch(ctx context.Context, eff *effect.Effect, cfg service.Config, ev effect.Evaluation, name string, inputs []jsontext.Text, stdout, stderr io.Writer) error {
	lim := cfg.Limits() // MAX_BATCH_ITEMS is evalCmd's to check, before anything runs
	p, err := eff.Prepare(ctx, ev)
	if err != nil {
		return fmt.Errorf("eval: %w (retryable: %v)", err, effect.Retryable(err))
	}
	level, _ := cfg.Level()
	log := telemetry.NewLogger(stderr, level, cfg.GoogleProject)
	out := bufio.NewWriter(stdout)
	sum, err := answer.Batch(ctx, eff, p, inputs, int(lim.MaxConcurrent), func(it effect.Item) api.BatchLine {
		l := answer.Item(lim, ev, it, "eval was interrupted before this input's run ended; it was not answered, and run again it runs as if for the first time")
		// each line of the file is one input (readInputs)
		answer.LogItem(ctx, log, "eval", ev, inputs[it.Index], it, l, fmt.Sprintf("%s:%d", name, it.Index+1))
		return l
	}, func(line []byte, _ api.BatchLine) error {
		if _, err := out.Write(line); err != nil {
			return err
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
