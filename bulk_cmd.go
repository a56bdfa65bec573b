package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/bulk"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/objects"
	"github.com/loom-plugins/sandbox-cloudrun/service"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// bulkUsage is the bulk verb's synopsis, with its exit statuses.
const bulkUsage = `usage: sandbox-cloudrun bulk [flags]

Runs this task's shard of a bulk run, as a Cloud Run job's task does
(docs/batch.md, "Bulk runs on Cloud Run Jobs"): reads the NDJSON inputs
(one input JSON value a line) of -inputs, takes shard CLOUD_RUN_TASK_INDEX of
CLOUD_RUN_TASK_COUNT (0 of 1 when unset) of them, a contiguous range of
their indices, runs the script over each input as POST
/v1/evaluations:batch runs it, MAX_CONCURRENT_EVALUATIONS at once, and
writes the shard's lines to <results>/shard-KKKKK-of-NNNNN.ndjson and then
its manifest, with the counts, to shard-KKKKK-of-NNNNN.json, each whole,
never appended to. A task run again in the same run (the same script,
inputs, task count and run flags; a Cloud Run retry) resumes its shard: it
keeps each line an earlier attempt answered, runs only the inputs left
not run or answered with a problem, and writes the whole shard again;
-redo runs every input. A results place holds one job's shards:
a task refuses one that holds another run's (of another task count, or its
shard of another script or inputs). A URL is gs://bucket/path (an object,
or every object under the prefix in name order), file:///path, or a local
file or directory. The script is read from STORE_URL; the other settings
are serve's. -wall-clock, -memory, -shape, -deterministic, -seed and -now
are each run's, as the batch body's members; -logs puts each run's console
output in its line (captureLogs).

exit status:
  0  the shard was written, and every input in it has its answer (a value
     or a typed failure), or an earlier attempt's shard of the same run
     already had them all and stands
  1  the shard was written with inputs not run (SIGTERM: the task's
     timeout) or answered with a problem (the engine or the store failed),
     or it could not be written (an earlier run's results stand), or the
     inputs, the results or the store failed for a moment (a 5xx, a
     timeout): a retry of the task can help, and it runs only those
     inputs; standard error says which
  3  the job cannot run as given: no input at -inputs, a line that is
     blank, not JSON or too long (named by its URL and line), results
     under the inputs, results the task may not write (refused, no such
     bucket, a path that is a file; tried before any input runs), results
     that hold another run's shards, or a script the store does not have
     or cannot run; nothing was written, and a retry will not help
  2  a usage error: a flag or a variable is wrong or missing (STORE_URL
     naming a directory that is not there among them); nothing ran`

// bulkCmd runs this task's shard of a bulk run. Its exit statuses are
// bulkUsage's.
func bulkCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bulk", bulkUsage)
	script := fs.String("script", "", "the script's reference, sha256:<hex>, in STORE_URL (default $BULK_SCRIPT)")
	inputs := fs.String("inputs", "", "the NDJSON inputs: gs://bucket/object, gs://bucket/prefix/, a file or a directory (default $BULK_INPUTS)")
	results := fs.String("results", "", "where the shard's results and manifest go: gs://bucket/prefix/ or a directory (default $BULK_RESULTS)")
	rf := fs.runFlags("each input")
	logs := fs.Bool("logs", false, "each input's console output in its line, as captureLogs")
	redo := fs.Bool("redo", false, "run every input of the shard, resuming nothing an earlier attempt of the same run left")
	positional, err := fs.parse(args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(positional) != 0 {
		return fs.usageError(stderr, "bulk: takes no arguments (the script, inputs and results are flags or BULK_ variables), got %d", len(positional))
	}
	if err := rf.check(fs, stderr); err != nil {
		return err
	}
	ev := spi.Evaluation{ExpectedOutputShapeHash: *rf.shape, CaptureLogs: *logs}
	if ev.Replay, err = rf.replay(fs, stderr); err != nil {
		return err
	}
	cfg, err := loadConfig("bulk", stderr)
	if err != nil {
		return exitError{2, err}
	}
	// what the configuration names on this host (the store's directory)
	// is there or not whatever the number of tries
	if probs := cfg.HostProblems(); len(probs) > 0 {
		return exitError{2, fmt.Errorf("configuration:\n%w", errors.Join(probs...))}
	}
	scriptFrom := "-script"
	if *script == "" {
		scriptFrom = "BULK_SCRIPT"
	}
	for _, v := range []struct {
		flag     *string
		name, fb string
	}{{script, "script", cfg.BulkScript}, {inputs, "inputs", cfg.BulkInputs}, {results, "results", cfg.BulkResults}} {
		if *v.flag == "" {
			*v.flag = v.fb
		}
		if *v.flag == "" {
			return fs.usageError(stderr, "bulk: no %s: give -%s or set BULK_%s", v.name, v.name, strings.ToUpper(v.name))
		}
	}
	if ev.ScriptRef, err = contentref.ParseRef(*script); err != nil {
		return fs.usageError(stderr, "bulk: %s", notAReference(*script, scriptFrom, cfg.StoreURL, err))
	}
	if cfg.StoreURL == "none" {
		return fs.usageError(stderr, "bulk: STORE_URL=none: no script store is configured to read %s from", *script)
	}
	ev.Limits = rf.limits(cfg, fs.Name(), stderr)

	level, _ := cfg.Level()
	log := telemetry.NewLogger(stderr, level, cfg.GoogleProject)
	svc, err := service.New(ctx, cfg, service.Options{Logger: log, Version: version})
	if err != nil {
		return fmt.Errorf("bulk: %w", err)
	}
	defer svc.Close(context.Background())
	m, err := bulk.Run(ctx, bulk.Job{
		Effect: svc.Effect, Limits: cfg.Limits(), Evaluation: ev,
		Parallel: cfg.MaxConcurrentEvaluations,
		Inputs:   *inputs, Results: *results,
		Task:         bulk.Task{Index: cfg.TaskIndex, Count: cfg.TaskCount, Attempt: cfg.TaskAttempt},
		MaxLineBytes: cfg.MaxRequestBytes,
		CommitGrace:  5 * time.Second,
		Warm:         svc.Warm,
		Redo:         *redo,
		Logger:       log,
	})
	var bad *bulk.InputError
	switch {
	case errors.As(err, &bad):
		return exitError{3, fmt.Errorf("bulk: %w", err)}
	case err != nil:
		return fmt.Errorf("bulk: task %d of %d: nothing was written: %w", cfg.TaskIndex, cfg.TaskCount, err)
	case !m.Complete():
		log.Warn("bulk shard incomplete", slog.Int("problems", m.Problems), slog.Int("notRun", m.NotRun))
		return fmt.Errorf("bulk: task %d of %d wrote %s with %d inputs not run and %d answered with a problem: run the task again", cfg.TaskIndex, cfg.TaskCount, m.Results, m.NotRun, m.Problems)
	}
	_, err = fmt.Fprintf(stdout, "%s: %d inputs [%d, %d) of %d: %s\n", m.Results, m.Items, m.Start, m.End, m.TotalInputs, outcomesText(m.Outcomes))
	return err
}

// outcomesText is a summary's outcomes as a person reads them: "ok 8,
// scriptError 1", ok first, the others by name; "none" for none.
func outcomesText(outcomes map[string]int) string {
	var parts []string
	if n, ok := outcomes["ok"]; ok {
		parts = append(parts, fmt.Sprintf("ok %d", n))
	}
	for _, name := range slices.Sorted(maps.Keys(outcomes)) {
		if name != "ok" {
			parts = append(parts, fmt.Sprintf("%s %d", name, outcomes[name]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// notAReference says why the script named by from (-script or
// BULK_SCRIPT) is refused, err being ParseRef's verdict. One that is not
// written as a reference at all is most likely a file meant to run: bulk
// runs a stored script by its reference only, which every task reads from
// the store, so it says how to store the file and what to give instead.
func notAReference(script, from, storeURL string, err error) string {
	if strings.HasPrefix(script, "sha256:") {
		return fmt.Sprintf("the script (%s): %v", from, err)
	}
	what := "is not a script reference"
	if fi, statErr := os.Stat(script); statErr == nil && fi.Mode().IsRegular() {
		what = "is a file, not a script reference"
	}
	store := "STORE_URL=" + shellQuote(storeURL)
	if storeURL == "" || storeURL == "none" {
		store = "STORE_URL=<the store the job reads>"
	}
	return fmt.Sprintf("the script (%s) %s %s: bulk runs a script stored in STORE_URL, by its reference sha256:<64 hex digits>, so that every task reads the same bytes; store it first with\n  %s sandbox-cloudrun put %s\nand give the reference it prints (the first field of its line) as %s",
		from, shellQuote(script), what, store, shellQuote(script), from)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// bulkCheckUsage is the bulk-check verb's synopsis, with its exit
// statuses.
const bulkCheckUsage = `usage: sandbox-cloudrun bulk-check -results URL

Checks that a bulk run's results place holds one whole run's shards, and
prints their lines, one per input in index order, to standard output
(docs/batch.md, "Checking a job's results"): every manifest
shard-KKKKK-of-NNNNN.json, K from 0 to N-1, is there beside its results
object; no shard is of another task count; every manifest names the same
run (task count, script, inputs and their digest, total, what each input
ran under); their ranges cover the inputs once, with no gap and no
overlap; and each results object is the one its manifest describes (its
length, its lines' indices and its SHA-256, checked as it is read). The
results objects are then printed in shard order, and a line on standard
error counts the job's outcomes. URL is gs://bucket/prefix/ or a
directory, as bulk's -results.

exit status:
  0  the results are one whole run's, and every input has its answer (a
     value or a typed failure)
  4  the results are one whole run's, and some inputs are notRun or
     problem lines (counted on standard error): executing the job again
     with the same variables resumes each shard and runs only those
  3  the results are not one whole run's: standard error names each shard
     and what is wrong (no manifest: its task has not written its shard;
     shards of another task count; a manifest of another run; inputs with
     no line or two; a results object that is not its manifest's).
     Nothing was printed, unless the damage was found as a results object
     was read: then the lines before it were, and are not the job's
  1  the results could not be read for a moment (a 5xx, a timeout), or an
     object changed while they were read (a task still writing): run the
     check again
  2  a usage error: -results is missing or not a URL; nothing was read`

// bulkCheckCmd checks a bulk run's results and prints them. Its exit
// statuses are bulkCheckUsage's.
func bulkCheckCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bulk-check", bulkCheckUsage)
	results := fs.String("results", "", "the job's results: gs://bucket/prefix/ or a directory, as bulk's -results")
	positional, err := fs.parse(args, stdout, stderr)
	if err != nil {
		return err
	}
	switch {
	case len(positional) != 0:
		return fs.usageError(stderr, "bulk-check: takes no arguments (the results are -results), got %d", len(positional))
	case *results == "":
		return fs.usageError(stderr, "bulk-check: no results: give -results, the job's BULK_RESULTS")
	}
	if _, err := objects.Parse(*results); err != nil {
		return fs.usageError(stderr, "bulk-check: -results: %v", err)
	}
	c, err := bulk.Check(ctx, *results, stdout)
	var notWhole *bulk.NotWhole
	switch {
	case errors.As(err, &notWhole):
		return exitError{3, fmt.Errorf("bulk-check: %w", err)}
	case err != nil:
		return fmt.Errorf("bulk-check: %w (a retry can help)", err)
	}
	fmt.Fprintf(stderr, "bulk-check: %s: one run of %d shards, %d inputs of script %s: %s; %d problems, %d not run\n",
		*results, c.Shards, c.TotalInputs, c.ScriptRef, outcomesText(c.Outcomes), c.Problems, c.NotRun)
	if !c.Complete() {
		return exitError{4, fmt.Errorf("bulk-check: %d inputs are not run and %d answered with a problem: execute the job again with the same variables, which runs only those", c.NotRun, c.Problems)}
	}
	return nil
}
