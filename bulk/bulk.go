// Package bulk runs one script over more inputs than one request can hold,
// as the tasks of a Cloud Run job (docs/batch.md, "Bulk runs on Cloud Run
// Jobs"): each task takes a contiguous shard of NDJSON inputs read from GCS
// or a directory, runs each input as POST /v1/evaluations:batch runs it,
// and writes its shard's lines and then a manifest, each object whole, so
// that a task run again replaces its shard rather than adds to it.
package bulk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/internal/ndjson"
	"github.com/loom-plugins/sandbox-cloudrun/internal/progress"
	"github.com/loom-plugins/sandbox-cloudrun/objects"
	"github.com/loom-plugins/sandbox-cloudrun/objects/gcsobjects"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Task is one task's place in a job execution: shard Index of Count, on
// its Attempt (0 the first run; Cloud Run counts the retries).
type Task struct {
	Index, Count, Attempt int
}

// Check says what is wrong with t, if anything.
func (t Task) Check() error {
	if t.Count < 1 || t.Index < 0 || t.Index >= t.Count || t.Attempt < 0 {
		return fmt.Errorf("task %d of %d (attempt %d): want 0 <= index < count and attempt >= 0", t.Index, t.Count, t.Attempt)
	}
	return nil
}

// Range is the task's shard of total inputs: the global indices [start,
// end), contiguous, the shards of a job's tasks together every index once
// and their sizes at most one apart. Every task computes every range
// alike, without a word from the others.
func (t Task) Range(total int64) (start, end int64) {
	n, k := int64(t.Count), int64(t.Index)
	return k * total / n, (k + 1) * total / n
}

// Name is the stem of the shard's objects: shard-KKKKK-of-NNNNN, so that
// the shards list in their order.
func (t Task) Name() string {
	return fmt.Sprintf("shard-%05d-of-%05d", t.Index, t.Count)
}

// Job is what one task runs.
type Job struct {
	// Effect runs the inputs; Limits are the service's (answer.Item
	// answers an input's problem under them).
	Effect *effect.Effect
	Limits api.Limits
	// Evaluation is each input's run but its input: the script by
	// reference, the limits, captureLogs, the expected shape and replay.
	Evaluation spi.Evaluation
	// Parallel is how many runs go at once (MAX_CONCURRENT_EVALUATIONS).
	Parallel int
	// Inputs and Results are URLs: gs://bucket/path or a local path.
	Inputs, Results string
	Task            Task
	// MaxLineBytes bounds an input's line (MAX_REQUEST_BYTES, the most an
	// input could take in a batch's body): a longer line is the inputs'
	// error. A line within it but over MAX_INPUT_BYTES is that input's
	// answer, inputTooLarge, as on the batch route.
	MaxLineBytes int64
	// CommitGrace is how long, once ctx has ended, the shard's objects may
	// take to be written (Cloud Run kills a task 10 s after its SIGTERM).
	CommitGrace time.Duration
	// Warm, when set, readies the engine; Run calls it once the inputs are
	// read and the script is, so that a job that cannot run fails before
	// any worker starts.
	Warm func(context.Context) error
	// Redo runs every input of the shard, resuming nothing of an
	// earlier attempt's (Run).
	Redo bool
	// Logger receives the task's log lines; nil discards.
	Logger *slog.Logger
	// ProgressEvery is how often, while the shard's inputs run, a
	// "bulk progress" line says how far they are (DefaultProgressEvery
	// when zero).
	ProgressEvery time.Duration
}

// DefaultProgressEvery is how often a task logs its progress: often
// enough that a person watching a job's log sees each task go on (or
// stall), a line that a task's own evaluation lines far outnumber.
const DefaultProgressEvery = 10 * time.Second

// Manifest is a shard's manifest, written after its results: its presence
// means the results object beside it is whole and is the one it
// describes.
type Manifest struct {
	Shard int `json:"shard"`
	// Identity is the run's, which every shard's manifest of it says
	// alike.
	Identity
	Attempt int `json:"attempt"`
	// Start and End are the shard's global indices, [Start, End).
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// Kept is how many of the shard's lines this attempt kept, as they
	// were, from the earlier attempt's shard it resumed; the others it
	// ran. 0 when it ran every input.
	Kept int `json:"kept"`
	// Results is the results object's URL; ResultsBytes and ResultsSHA256
	// its length and digest, for a reader to check that it is the one
	// described.
	Results       string `json:"results"`
	ResultsBytes  int64  `json:"resultsBytes"`
	ResultsSHA256 string `json:"resultsSha256"`
	// BatchSummary counts the shard's lines and sums their usage, as a
	// batch's summary line does, its members flat in the manifest's.
	api.BatchSummary
	// Seconds is how long the shard's runs took, from the script's read
	// to the last line.
	Seconds float64 `json:"seconds"`
}

// Complete reports whether every input of the shard has its answer: no
// problem, and none not run.
func (m Manifest) Complete() bool { return m.Problems == 0 && m.NotRun == 0 }

// InputError is a job that cannot run as it is given, whatever the number
// of tries: a URL with no inputs, a line that is not one JSON value,
// results the task may not write or that hold another run's shards, a
// script that cannot be run. Nothing of the shard was written.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputError(format string, args ...any) error {
	return &InputError{fmt.Errorf(format, args...)}
}

// Run runs the job's task: it counts the inputs, reads its shard of them,
// reads the script once, runs each input as the batch route does, and
// writes the shard's lines, one per input in index order, to
// <results>/shard-KKKKK-of-NNNNN.ndjson and then its manifest to
// shard-KKKKK-of-NNNNN.json, each whole: a manifest left by an earlier
// run of the task is deleted first, so that a manifest is never beside
// results it does not describe. Before any input runs, it makes sure that
// the results can be written and hold no other run's shards
// (checkResults), so that a re-run never leaves two answers for one
// input.
//
// A task whose earlier attempt of the same run left its shard resumes it
// (resume), unless job.Redo: it runs only the inputs whose lines were
// notRun or a problem, and writes the whole shard again, the other lines
// kept as they were, the manifest counting them all. A shard with nothing
// left to run stands as it is, and Run returns its manifest.
//
// When ctx ends, the inputs whose runs had not ended are not-run lines and
// the shard is still written, within CommitGrace. When the lines cannot be
// written, nothing is committed and what an earlier run wrote stands
// (without its manifest if it was deleted). Run returns the manifest
// written, which says whether the shard is Complete; its error is an
// *InputError for inputs that cannot run as given.
func Run(ctx context.Context, job Job) (Manifest, error) {
	log := job.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := job.Task.Check(); err != nil {
		return Manifest{}, err
	}
	if job.Evaluation.ScriptRef.IsZero() {
		return Manifest{}, errors.New("bulk: the script is by reference only")
	}
	inURL, err := objects.Parse(job.Inputs)
	if err != nil {
		return Manifest{}, inputError("the inputs: %w", err)
	}
	outURL, err := objects.Parse(job.Results)
	if err != nil {
		return Manifest{}, inputError("the results: %w", err)
	}
	var places gcsobjects.Opener
	defer places.Close()
	in, err := places.Open(ctx, inURL)
	if err != nil {
		return Manifest{}, fmt.Errorf("the inputs: %w", err)
	}
	out, err := places.Open(ctx, outURL)
	if err != nil {
		return Manifest{}, fmt.Errorf("the results: %w", err)
	}

	objs, err := inputObjects(ctx, in)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Manifest{}, inputError("the inputs cannot be listed: %w", err)
	case err != nil: // perhaps a moment's: a retry may read them
		return Manifest{}, fmt.Errorf("the inputs cannot be listed: %w", err)
	}
	if len(objs) == 0 {
		return Manifest{}, inputError("the inputs: no object or file at %s", in.URL(""))
	}
	if inside(inURL, outURL, objs) {
		return Manifest{}, inputError("the results %s are under the inputs %s: a later task would read the shards as inputs; write them elsewhere", out.URL(""), in.URL(""))
	}
	was, err := checkResults(ctx, job, out)
	if err != nil {
		return Manifest{}, err
	}
	parts := make([]ndjson.Part, len(objs))
	var total int64
	digest := sha256.New() // of the objects' digests
	for i, o := range objs {
		parts[i] = ndjson.Part{Name: in.URL(o.Name), Open: func() (io.ReadCloser, error) { return in.Open(ctx, o) }}
		var sum []byte
		if parts[i].Lines, sum, err = countLines(parts[i]); err != nil {
			return Manifest{}, err
		}
		total += parts[i].Lines
		digest.Write(sum)
	}
	start, end := job.Task.Range(total)
	m := Manifest{
		Shard: job.Task.Index, Attempt: job.Task.Attempt,
		Identity: Identity{
			Shards: job.Task.Count, ScriptRef: job.Evaluation.ScriptRef.String(), Inputs: job.Inputs,
			InputsSHA256: hex.EncodeToString(digest.Sum(nil)), TotalInputs: total, InputObjects: len(objs),
		},
		Start: start, End: end,
		Results: out.URL(job.Task.Name() + ".ndjson"),
	}
	log.Info("bulk shard", "task", job.Task.Index, "tasks", job.Task.Count, "attempt", job.Task.Attempt,
		"inputs", job.Inputs, "totalInputs", total, "start", start, "end", end)
	lines, err := ndjson.ReadRange(parts, start, end, ndjson.Limit{Bytes: job.MaxLineBytes, Name: "MAX_REQUEST_BYTES"})
	var bad *ndjson.LineError
	switch {
	case errors.As(err, &bad):
		return Manifest{}, &InputError{err}
	case errors.Is(err, ndjson.ErrChanged):
		return Manifest{}, fmt.Errorf("%w; run the execution again on inputs that do not change", err)
	case err != nil:
		return Manifest{}, fmt.Errorf("the inputs: %w", err)
	}
	inputs := make([]jsontext.Text, len(lines))
	for i, l := range lines {
		inputs[i] = l.Text
	}

	began := time.Now()
	p, err := job.Effect.Prepare(ctx, job.Evaluation)
	if err != nil {
		return Manifest{}, fmt.Errorf("reading the script %s (retryable: %v): %w", m.ScriptRef, effect.Retryable(err), err)
	}
	if err := p.Failure(); err != nil { // every input's answer would be this
		return Manifest{}, inputError("the script %s cannot be run, so no input was: %w", m.ScriptRef, err)
	}
	m.Evaluation = evaluation(job.Evaluation, p)
	// the inputs to run: the shard's, or those an earlier attempt of this
	// very run left without an answer
	var res *resumed
	if was != nil && !job.Redo {
		var why string
		if res, why, err = resume(ctx, out, was, m); err != nil {
			return Manifest{}, err
		}
		if why != "" {
			log.Warn("bulk shard run whole", "task", job.Task.Index, "why", "an earlier attempt's shard is there, but "+why)
		}
	}
	run := make([]int, len(inputs)) // each input to run, by its index in the shard
	for i := range run {
		run[i] = i
	}
	if res != nil {
		run = res.toRun()
		m.Kept = res.kept.Items
		log.Info("bulk shard resumed", "task", job.Task.Index, "earlierAttempt", res.from.Attempt, "kept", m.Kept, "toRun", len(run))
		if len(run) == 0 { // every input has its answer: the shard stands
			return res.from, nil
		}
	}
	todo := make([]jsontext.Text, len(run))
	for k, i := range run {
		todo[k] = inputs[i]
	}
	if job.Warm != nil {
		if err := job.Warm(ctx); err != nil {
			return Manifest{}, fmt.Errorf("starting the engine: %w", err)
		}
	}
	results, err := out.Create(ctx, job.Task.Name()+".ndjson")
	if err != nil {
		return Manifest{}, fmt.Errorf("the results %s: %w", m.Results, err)
	}
	defer results.Abort()
	digest = sha256.New()
	w := &countingWriter{w: io.MultiWriter(results, digest)}
	lineOf := func(i int, line []byte) error { _, err := w.Write(line); return err }
	var merge *merger
	if res != nil {
		merge = &merger{keep: res.keep, w: w}
		lineOf = merge.line
	}
	done := progress.NewMeter(len(todo))
	every := job.ProgressEvery
	if every <= 0 {
		every = DefaultProgressEvery
	}
	stopProgress := done.LogEvery(ctx, log, every, "bulk progress", slog.Int("task", job.Task.Index))
	defer stopProgress()
	sum, err := answer.Batch(ctx, job.Effect, p, todo, job.Parallel, func(it effect.Item) api.BatchLine {
		i := run[it.Index]        // its index in the shard
		it.Index = int(start) + i // the global index
		l := answer.Item(job.Limits, job.Evaluation, it, notRunDetail(ctx))
		answer.LogItem(ctx, log, "bulk", job.Evaluation, inputs[i], it, l, lines[i].Source.String())
		return l
	}, func(line []byte, l api.BatchLine, _ bool) error {
		if l.Summary != nil {
			return nil // the manifest counts the shard: the shards concatenated are the inputs' lines
		}
		err := lineOf(l.Index-int(start), line)
		done.Add(1)
		return err
	})
	stopProgress()
	if err == nil && merge != nil {
		err = merge.keptUpTo(len(inputs))
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("the results %s: %w", m.Results, err)
	}
	m.Seconds = time.Since(began).Seconds()
	m.BatchSummary = sum
	if res != nil {
		addSummary(&m.BatchSummary, res.kept)
	}
	m.ResultsBytes, m.ResultsSHA256 = w.n, hex.EncodeToString(digest.Sum(nil))
	if err := commit(ctx, job, out, results, m); err != nil {
		return Manifest{}, err
	}
	log.Info("bulk shard written", "task", job.Task.Index, "results", m.Results, "items", m.Items, "ran", len(todo), "kept", m.Kept,
		"outcomes", m.Outcomes, "problems", m.Problems, "notRun", m.NotRun, "seconds", m.Seconds)
	return m, nil
}

// notRunDetail says why an input of a shard was not run: what ended the
// task's ctx, as its cause says (signal.NotifyContext's names the signal
// received).
func notRunDetail(ctx context.Context) string {
	why := "the task was stopped"
	switch cause := context.Cause(ctx); {
	case cause == nil || cause == context.Canceled:
	case isSignal(cause, syscall.SIGTERM):
		why = "the task received SIGTERM (its timeout passed, or the execution was cancelled)"
	case isSignal(cause, os.Interrupt):
		why = "the task was interrupted (SIGINT)"
	case errors.Is(cause, context.DeadlineExceeded):
		why = "the task's deadline passed"
	default:
		why += " (" + cause.Error() + ")"
	}
	return why + " before this input's run ended; it was not answered, and the task run again runs it as if for the first time"
}

// isSignal reports whether cause is signal.NotifyContext's for s.
func isSignal(cause error, s os.Signal) bool { return cause.Error() == s.String()+" signal received" }

// commit deletes the shard's old manifest, commits its results and writes
// its manifest, within CommitGrace once ctx has ended.
func commit(ctx context.Context, job Job, out objects.Place, results objects.Writer, m Manifest) error {
	cctx := context.WithoutCancel(ctx)
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(cctx, max(job.CommitGrace, time.Second))
		defer cancel()
	}
	name := job.Task.Name() + ".json"
	if err := out.Delete(cctx, name); err != nil {
		return fmt.Errorf("the old manifest: %w", err)
	}
	if err := results.Commit(cctx); err != nil {
		return fmt.Errorf("the results: %w", err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("the manifest: %w", err)
	}
	mw, err := out.Create(cctx, name)
	if err != nil {
		return fmt.Errorf("the manifest %s: %w", out.URL(name), err)
	}
	defer mw.Abort()
	if _, err := mw.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("the manifest: %w", err)
	}
	if err := mw.Commit(cctx); err != nil {
		return fmt.Errorf("the manifest: %w", err)
	}
	return nil
}

// inputObjects are the inputs the place's URL names, in name order, each
// at the generation found, so that reading one again reads the same bytes:
// the one object or file the URL names, or else every object or file under
// it.
func inputObjects(ctx context.Context, in objects.Place) ([]objects.Object, error) {
	o, err := in.Stat(ctx, "")
	switch {
	case err == nil:
		return []objects.Object{o}, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	return in.List(ctx)
}

// inside reports whether the results are within the inputs when these are
// a prefix or a directory (objs, their listing, is more than the one
// object the URL names): the tasks that ran later would read the shards of
// those that ran before as inputs.
func inside(inputs, results objects.URL, objs []objects.Object) bool {
	switch {
	case len(objs) == 1 && objs[0].Name == "":
		return false
	case inputs.GCS() || results.GCS():
		return inputs.Bucket == results.Bucket && strings.HasPrefix(results.Prefix(), inputs.Prefix())
	}
	ia, err1 := filepath.Abs(inputs.Path)
	ra, err2 := filepath.Abs(results.Path)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(ia, ra)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// countLines counts p's lines, scanning its bytes without parsing them,
// and digests them (SHA-256).
func countLines(p ndjson.Part) (int64, []byte, error) {
	r, err := p.Open()
	if err != nil {
		return 0, nil, fmt.Errorf("the inputs: %w", err)
	}
	defer r.Close()
	digest := sha256.New()
	n, err := ndjson.Count(io.TeeReader(r, digest))
	if err != nil {
		return 0, nil, fmt.Errorf("reading %s: %w", p.Name, err)
	}
	return n, digest.Sum(nil), nil
}

// countingWriter counts what it writes.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
