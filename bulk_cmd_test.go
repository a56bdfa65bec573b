package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/bulk"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/internal/gcsfake"
	"github.com/loom-plugins/sandbox-cloudrun/service"
)

// bulkScript throws for an input with "throw", takes 1.5 s for one with
// "slow" (so that a test can stop a task in the middle of its shard), and
// logs, so that -logs is seen in the lines.
const bulkScript = `if (input.slow) { const t = Date.now(); while (Date.now() - t < 1500) {} }
if (input.throw) throw new Error("boom " + input.n);
console.log("n", input.n);
({n: input.n, twice: input.n * 2})`

// bulkInputs are 25 inputs: 7 throws, 17 is slow.
func bulkInputs() []string {
	var in []string
	for i := range 25 {
		switch i {
		case 7:
			in = append(in, fmt.Sprintf(`{"n":%d,"throw":true}`, i))
		case 17:
			in = append(in, fmt.Sprintf(`{"n":%d,"slow":true}`, i))
		default:
			in = append(in, fmt.Sprintf(`{"n":%d}`, i))
		}
	}
	return in
}

// bulkEnv is a bulk test's world: a script store in a directory with the
// script in it, the real fake-gcs-server (the real GCS client reaches it
// through STORAGE_EMULATOR_HOST), with switches in front of it that fail
// the uploads of a shard's objects (failUpload: not the probe a task
// writes before it runs) or every request for the results bucket with a
// status (failResults), and the environment every task of the test
// shares.
type bulkEnv struct {
	ref         string
	gcs         *gcsfake.Server
	failUpload  atomic.Bool
	failResults atomic.Int32
	failed      atomic.Int32 // the requests failResults failed
	env         map[string]string
}

func newBulkEnv(t *testing.T) *bulkEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	b := &bulkEnv{}
	b.gcs = gcsfake.Start(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if b.failUpload.Load() && strings.HasPrefix(r.URL.Path, "/upload/") && !strings.HasSuffix(r.URL.Query().Get("name"), ".writable") {
				http.Error(w, "refused by the test", http.StatusForbidden)
				return
			}
			if code := int(b.failResults.Load()); code != 0 && strings.Contains(r.URL.Path, "/b/results/") {
				b.failed.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(code)
				fmt.Fprintf(w, `{"error":{"code":%d,"message":"refused by the test"}}`, code)
				return
			}
			next.ServeHTTP(w, r)
		})
	}, "inputs", "results")
	store := t.TempDir()
	ds, err := contentstore.NewDirStore(store, contentstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ds.Put(context.Background(), []byte(bulkScript))
	if err != nil {
		t.Fatal(err)
	}
	b.ref = ref.String()
	b.env = map[string]string{
		"STORAGE_EMULATOR_HOST":      b.gcs.Addr,
		"STORE_URL":                  store,
		"MAX_CONCURRENT_EVALUATIONS": "2",
		"WORKER_SPARES":              "0",
		"COMPILATION_CACHE_DIR":      filepath.Join(os.TempDir(), "sandbox-cloudrun-bulk-test-cache"),
		"LOG_LEVEL":                  "warn",
	}
	for k, v := range b.env {
		t.Setenv(k, v)
	}
	return b
}

// put writes lines to the fake bucket's object name, one a line.
func (b *bulkEnv) put(bucket, name string, lines ...string) {
	body := ""
	for _, l := range lines {
		body += l + "\n"
	}
	b.gcs.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: name}, Content: []byte(body)})
}

// object is an object's bytes, or nil when it is not there.
func (b *bulkEnv) object(bucket, name string) []byte {
	o, err := b.gcs.GetObject(bucket, name)
	if err != nil {
		return nil
	}
	return o.Content
}

// task runs the verb as task index of count, on attempt, with args.
func (b *bulkEnv) task(ctx context.Context, t *testing.T, index, count, attempt int, stderr *syncBuffer, args ...string) error {
	t.Helper()
	t.Setenv("CLOUD_RUN_TASK_INDEX", strconv.Itoa(index))
	t.Setenv("CLOUD_RUN_TASK_COUNT", strconv.Itoa(count))
	t.Setenv("CLOUD_RUN_TASK_ATTEMPT", strconv.Itoa(attempt))
	if stderr == nil {
		stderr = &syncBuffer{}
	}
	var stdout bytes.Buffer
	err := run(ctx, append([]string{"bulk"}, args...), nil, &stdout, stderr)
	if err != nil {
		t.Logf("bulk task %d of %d: %v (exit %d)\n%s", index, count, err, exitCode(err), stderr.String())
	}
	return err
}

// routeLines are the batch route's lines for inputs, without their usage,
// from a service configured by the same environment: what each shard's
// lines must be.
func routeLines(t *testing.T, ref string, inputs []string) []string {
	t.Helper()
	env, err := service.ReadEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := service.LoadConfig(env)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(context.Background(), cfg, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	// ready as serve makes it before it takes a request: a first worker
	// started on a busy machine can take longer than a run's deadline
	if err := svc.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler)
	defer srv.Close()
	code, body := postRaw(t, srv.URL+"/v1/evaluations:batch",
		`{"scriptRef":"`+ref+`","captureLogs":true,"inputs":[`+strings.Join(inputs, ",")+`]}`)
	if code != http.StatusOK {
		t.Fatalf("the batch route answered %d %s", code, body)
	}
	lines := linesWithoutUsage(t, body)
	if len(lines) != len(inputs)+1 || !strings.HasPrefix(lines[len(lines)-1], `{"summary":`) {
		t.Fatalf("the batch route's lines: %q", lines)
	}
	return lines[:len(inputs)]
}

// linesWithoutUsage are body's lines, each read as a batch line and
// written again without its usage (what a run used varies).
func linesWithoutUsage(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, raw := range bytes.SplitAfter(body, []byte("\n")) {
		if len(raw) == 0 {
			continue
		}
		if raw[len(raw)-1] != '\n' {
			t.Fatalf("a line without its newline: %q", raw)
		}
		l, err := api.DecodeBatchLine(bytes.TrimSuffix(raw, []byte("\n")))
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if l.Answer != nil {
			l.Answer.Usage = nil
		}
		b, err := api.AppendBatchLine(nil, l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.TrimSuffix(string(b), "\n"))
	}
	return out
}

// manifest reads and checks a shard's manifest: its members are
// docs/batch.md's, flat, each named as there; it describes the results
// object beside it (length and digest).
func manifestOf(t *testing.T, manifest, results []byte) bulk.Manifest {
	t.Helper()
	var m bulk.Manifest
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatalf("manifest %s: %v", manifest, err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(manifest, &members); err != nil {
		t.Fatalf("manifest %s: %v", manifest, err)
	}
	want := []string{"shard", "shards", "attempt", "scriptRef", "inputs", "inputsSha256", "totalInputs", "inputObjects", "evaluation", "start", "end", "kept",
		"results", "resultsBytes", "resultsSha256", "items", "outcomes", "problems", "notRun", "usage", "seconds"}
	if got := slices.Sorted(maps.Keys(members)); !slices.Equal(got, slices.Sorted(slices.Values(want))) ||
		members["outcomes"][0] != '{' || members["usage"][0] != '{' || members["evaluation"][0] != '{' {
		t.Errorf("the manifest's members are %v, want %v, outcomes, usage and evaluation objects: %s", got, want, manifest)
	}
	sum := sha256.Sum256(results)
	if m.ResultsBytes != int64(len(results)) || m.ResultsSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("the manifest describes %d bytes %s; the results are %d bytes %x", m.ResultsBytes, m.ResultsSHA256, len(results), sum)
	}
	return m
}

// indices are the indices of lines, in their order.
func indices(t *testing.T, lines []string) []int {
	t.Helper()
	var out []int
	for _, l := range lines {
		bl, err := api.DecodeBatchLine([]byte(l))
		if err != nil || bl.Summary != nil {
			t.Fatalf("%q: %v", l, err)
		}
		out = append(out, bl.Index)
	}
	return out
}

func shardName(k, n int, ext string) string {
	return fmt.Sprintf("res/shard-%05d-of-%05d.%s", k, n, ext)
}

// A job of three tasks over 25 inputs in two objects: each task writes
// its shard, and together the shards are one line per input, in index
// order, each the line the batch route gives that input; each manifest
// counts its shard; and each input is an evaluation log line, as on the
// route, with its global index and the object and line it was read from.
func TestBulkShardedRun(t *testing.T) {
	b := newBulkEnv(t)
	t.Setenv("LOG_LEVEL", "info")
	inputs := bulkInputs()
	b.put("inputs", "jobs/a/part-1.ndjson", inputs[:10]...)
	b.put("inputs", "jobs/a/part-2.ndjson", inputs[10:]...)
	b.put("inputs", "jobs/b/other.ndjson", `{"n":99}`) // another prefix: not an input
	want := routeLines(t, b.ref, inputs)

	args := []string{"-script", b.ref, "-inputs", "gs://inputs/jobs/a/", "-results", "gs://results/res", "-logs", "-wall-clock", "4s"}
	// the inputs' digest: of the objects' digests, in their order
	d1, d2 := sha256.Sum256(b.object("inputs", "jobs/a/part-1.ndjson")), sha256.Sum256(b.object("inputs", "jobs/a/part-2.ndjson"))
	inputsDigest := sha256.Sum256(append(d1[:], d2[:]...))
	var got []string
	outcomes := map[string]int{}
	var logged []map[string]any
	for k := range 3 {
		var stderr syncBuffer
		if err := b.task(context.Background(), t, k, 3, 0, &stderr, args...); err != nil {
			t.Fatalf("task %d: %v", k, err)
		}
		logged = append(logged, evaluationLines(t, stderr.String())...)
		results := b.object("results", shardName(k, 3, "ndjson"))
		m := manifestOf(t, b.object("results", shardName(k, 3, "json")), results)
		lines := linesWithoutUsage(t, results)
		start, end := int64(k*25/3), int64((k+1)*25/3)
		if m.Shard != k || m.Shards != 3 || m.Start != start || m.End != end || m.Items != len(lines) ||
			m.Items != int(end-start) || m.TotalInputs != 25 || m.InputObjects != 2 || m.ScriptRef != b.ref ||
			m.Problems != 0 || m.NotRun != 0 || m.Results != "gs://results/res/"+strings.TrimPrefix(shardName(k, 3, "ndjson"), "res/") ||
			m.InputsSHA256 != hex.EncodeToString(inputsDigest[:]) {
			t.Errorf("task %d's manifest: %+v", k, m)
		}
		// what each input ran under, as the batch body says it
		if ev := string(m.Evaluation); !strings.HasPrefix(ev, `{"limits":{"wallClockMs":4000,"memoryBytes":`) || !strings.HasSuffix(ev, `},"captureLogs":true}`) {
			t.Errorf("task %d's manifest's evaluation: %s", k, ev)
		}
		for o, n := range m.Outcomes {
			outcomes[o] += n
		}
		got = append(got, lines...)
	}
	if len(got) != len(want) {
		t.Fatalf("the shards have %d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	if outcomes["ok"] != 24 || outcomes["scriptError"] != 1 || len(outcomes) != 2 {
		t.Errorf("the manifests' outcomes: %v", outcomes)
	}
	if len(logged) != len(inputs) {
		t.Fatalf("%d evaluation lines logged for %d inputs", len(logged), len(inputs))
	}
	for i, l := range logged {
		src := fmt.Sprintf("gs://inputs/jobs/a/part-1.ndjson:%d", i+1)
		if i >= 10 {
			src = fmt.Sprintf("gs://inputs/jobs/a/part-2.ndjson:%d", i-10+1)
		}
		outcome := "ok"
		if i == 7 {
			outcome = "scriptError"
		}
		if l["index"] != float64(i) || l["source"] != src || l["route"] != "bulk" || l["script"] != b.ref || l["outcome"] != outcome || l["inputBytes"] != float64(len(inputs[i])) {
			t.Errorf("input %d's evaluation line: %v; want index %d, source %s, outcome %s", i, l, i, src, outcome)
		}
	}
}

// evaluationLines are the evaluation lines of a verb's log, in order.
func evaluationLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for l := range strings.Lines(log) {
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			continue // a verb's plain words
		}
		if line["message"] == answer.EvaluationMessage {
			out = append(out, line)
		}
	}
	return out
}

// A task whose results cannot be written commits nothing: its old
// manifest is gone (no manifest stands beside results it does not
// describe) and its old results stand whole; a task stopped midway
// (SIGTERM) writes its shard with the inputs it had not run as not-run
// lines and exits 1; and the task run again replaces its shard: one line
// per index, never two.
func TestBulkTaskFailsMidwayAndIsRerun(t *testing.T) {
	b := newBulkEnv(t)
	inputs := bulkInputs()
	b.put("inputs", "all.ndjson", inputs...)
	args := []string{"-script", b.ref, "-inputs", "gs://inputs/all.ndjson", "-results", "gs://results/res/"}
	const k, n = 2, 3 // [16, 25), whose 17 is slow
	wantIndices := "16 17 18 19 20 21 22 23 24"

	if err := b.task(context.Background(), t, k, n, 0, nil, args...); err != nil {
		t.Fatal(err)
	}
	old := b.object("results", shardName(k, n, "ndjson"))
	manifestOf(t, b.object("results", shardName(k, n, "json")), old)

	// the results writer fails: nothing committed (-redo: the shard above
	// is whole, and a task would resume it with nothing to run)
	b.failUpload.Store(true)
	err := b.task(context.Background(), t, k, n, 1, nil, append(args, "-redo")...)
	b.failUpload.Store(false)
	if exitCode(err) != 1 || !strings.Contains(fmt.Sprint(err), "nothing was written") {
		t.Errorf("a task whose results cannot be written: %v (exit %d), want exit 1 saying nothing was written", err, exitCode(err))
	}
	if m := b.object("results", shardName(k, n, "json")); m != nil {
		t.Errorf("a manifest stands after a failed write: %s", m)
	}
	if got := b.object("results", shardName(k, n, "ndjson")); !bytes.Equal(got, old) {
		t.Errorf("the old results did not stand whole:\n%s\nwas\n%s", got, old)
	}

	// stopped midway (-redo: the whole shard again): the task's context
	// ends the moment its first run ends, which is 16's: 17 never ends by
	// itself in this run, every clock being frozen (-deterministic) under
	// its wall-clock limit, the longest the service allows, and 18 to 24
	// wait for the slot 16 frees. So 16 is answered and 17 to 24 are not,
	// whatever the machine's speed. The run's end is the effect's debug
	// line, which is written before the run returns.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncBuffer{onWrite: func(s string) {
		if strings.Contains(s, `"message":"sandbox evaluation"`) {
			cancel()
		}
	}}
	t.Setenv("LOG_LEVEL", "debug")
	err = b.task(ctx, t, k, n, 2, stderr, append(args, "-redo", "-deterministic", "-wall-clock", "30s")...)
	t.Setenv("LOG_LEVEL", "warn")
	if exitCode(err) != 1 || !strings.Contains(fmt.Sprint(err), "8 inputs not run") {
		t.Errorf("a task stopped midway: %v (exit %d), want exit 1 naming the 8 inputs not run", err, exitCode(err))
	}
	results := b.object("results", shardName(k, n, "ndjson"))
	m := manifestOf(t, b.object("results", shardName(k, n, "json")), results)
	lines := linesWithoutUsage(t, results)
	if got := strings.Trim(fmt.Sprint(indices(t, lines)), "[]"); got != wantIndices {
		t.Fatalf("the stopped task's lines have indices %s, want %s", got, wantIndices)
	}
	if !strings.HasPrefix(lines[0], `{"index":16,"ok":true,`) {
		t.Errorf("the input that ended before the stop is not answered: %s", lines[0])
	}
	for _, l := range lines[1:] {
		if !strings.Contains(l, `,"notRun":true`) {
			t.Errorf("an input stopped or never started is not a not-run line: %s", l)
		}
	}
	if m.NotRun != 8 || m.Outcomes["ok"] != 1 || m.Attempt != 2 || m.Items != 9 {
		t.Errorf("the stopped task's manifest: %+v", m)
	}

	// run again: the shard replaced, one line per index
	if err := b.task(context.Background(), t, k, n, 3, nil, args...); err != nil {
		t.Fatal(err)
	}
	results = b.object("results", shardName(k, n, "ndjson"))
	m = manifestOf(t, b.object("results", shardName(k, n, "json")), results)
	lines = linesWithoutUsage(t, results)
	if got := strings.Trim(fmt.Sprint(indices(t, lines)), "[]"); got != wantIndices {
		t.Errorf("the re-run task's lines have indices %s, want %s", got, wantIndices)
	}
	if m.NotRun != 0 || m.Problems != 0 || m.Attempt != 3 || m.Outcomes["ok"] != 9 {
		t.Errorf("the re-run task's manifest: %+v", m)
	}
}

// syncBuffer is a standard error that several goroutines write (the
// logger), with a hook that sees each write.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	onWrite func(string)
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.onWrite != nil {
		s.onWrite(string(p))
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The directory form: inputs in the files under a directory (in the order
// of their slash-separated names, as GCS lists a prefix), results in a
// directory made for them, each file renamed into place whole, leaving no
// temporary file; a second run replaces the shard.
func TestBulkDirectory(t *testing.T) {
	b := newBulkEnv(t)
	inputs := bulkInputs()[:12]
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out", "run-1")
	write := func(name string, lines ...string) {
		p := filepath.Join(in, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil { // the last line without its newline
			t.Fatal(err)
		}
	}
	// WalkDir visits a/ before a.ndjson; a.ndjson's name comes first
	write("a.ndjson", inputs[:4]...)
	write("a/b.ndjson", inputs[4:9]...)
	write("c.ndjson", inputs[9:]...)
	want := routeLines(t, b.ref, inputs)
	for range 2 {
		if err := b.task(context.Background(), t, 0, 1, 0, nil, "-script", b.ref, "-inputs", in, "-results", out, "-logs"); err != nil {
			t.Fatal(err)
		}
		results, err := os.ReadFile(filepath.Join(out, "shard-00000-of-00001.ndjson"))
		if err != nil {
			t.Fatal(err)
		}
		manifest, err := os.ReadFile(filepath.Join(out, "shard-00000-of-00001.json"))
		if err != nil {
			t.Fatal(err)
		}
		m := manifestOf(t, manifest, results)
		if got := linesWithoutUsage(t, results); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("the results:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if m.TotalInputs != 12 || m.InputObjects != 3 || m.Items != 12 {
			t.Errorf("manifest %+v", m)
		}
		entries, _ := os.ReadDir(out)
		if len(entries) != 2 {
			t.Errorf("the results directory holds %v, want the shard's two files", entries)
		}
	}
}

// Inputs that cannot run as given are refused before anything runs or is
// written, exit 3, naming what is wrong and where; a missing flag or a
// task index out of range is a usage error, exit 2.
func TestBulkBadInputs(t *testing.T) {
	b := newBulkEnv(t)
	b.put("inputs", "bad/a.ndjson", `{"n":0}`, `{"n":1}`, `{"n":2,`)
	b.put("inputs", "blank/a.ndjson", `{"n":0}`, ``, `{"n":2}`)
	b.put("inputs", "ok.ndjson", `{"n":0}`, `{"n":1}`)
	b.put("inputs", "array.json", `[`, `  {"n": 0},`, `  {"n": 1}`, `]`)
	dir := t.TempDir()
	missing := "sha256:" + strings.Repeat("0", 64)
	script := filepath.Join(dir, "s.js")
	if err := os.WriteFile(script, []byte("input"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		exit int
		want []string
	}{
		{"no object under the prefix", []string{"-script", b.ref, "-inputs", "gs://inputs/nothing/", "-results", "gs://results/r/"}, 3,
			[]string{"no object or file at gs://inputs/nothing/"}},
		{"no such bucket", []string{"-script", b.ref, "-inputs", "gs://nobucket/x.ndjson", "-results", "gs://results/r/"}, 3,
			[]string{"gs://nobucket/x.ndjson"}},
		{"no such directory", []string{"-script", b.ref, "-inputs", filepath.Join(dir, "nothing"), "-results", dir}, 3,
			[]string{filepath.Join(dir, "nothing"), "no such file"}},
		{"a line not JSON", []string{"-script", b.ref, "-inputs", "gs://inputs/bad/", "-results", "gs://results/r/"}, 3,
			[]string{"gs://inputs/bad/a.ndjson:3 (input 2)", "not one JSON value"}},
		{"one JSON array", []string{"-script", b.ref, "-inputs", "gs://inputs/array.json", "-results", "gs://results/r/"}, 3,
			[]string{"gs://inputs/array.json:1 (input 0): the line is not one JSON value", "one JSON value a line (NDJSON)", "jq -c '.[]' file.json > file.ndjson"}},
		{"a blank line", []string{"-script", b.ref, "-inputs", "gs://inputs/blank", "-results", "gs://results/r/"}, 3,
			[]string{"gs://inputs/blank/a.ndjson:2 (input 1)", "blank"}},
		{"the script not stored", []string{"-script", missing, "-inputs", "gs://inputs/ok.ndjson", "-results", "gs://results/r/"}, 3,
			[]string{"the script " + missing + " cannot be run", "scriptMissing"}},
		{"results under the inputs", []string{"-script", b.ref, "-inputs", "gs://inputs/bad/", "-results", "gs://inputs/bad/out/"}, 3,
			[]string{"under the inputs gs://inputs/bad/"}},
		{"no results", []string{"-script", b.ref, "-inputs", "gs://inputs/ok.ndjson"}, 2,
			[]string{"no results: give -results or set BULK_RESULTS"}},
		{"a bad reference", []string{"-script", "sha256:xyz", "-inputs", "gs://inputs/ok.ndjson", "-results", "gs://results/r/"}, 2,
			[]string{"the script (-script)", "64 hex digits"}},
		{"a file for the script", []string{"-script", script, "-inputs", "gs://inputs/ok.ndjson", "-results", "gs://results/r/"}, 2,
			[]string{"the script (-script) " + script + " is a file, not a script reference",
				"STORE_URL=" + os.Getenv("STORE_URL") + " sandbox-cloudrun put " + script + "\n", "the reference it prints"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := b.task(context.Background(), t, 0, 1, 0, nil, tc.args...)
			if exitCode(err) != tc.exit {
				t.Errorf("%v: exit %d, want %d", err, exitCode(err), tc.exit)
			}
			for _, w := range tc.want {
				if !strings.Contains(fmt.Sprint(err), w) {
					t.Errorf("%v does not say %q", err, w)
				}
			}
			if o := b.object("results", "r/shard-00000-of-00001.ndjson"); o != nil {
				t.Errorf("results were written: %s", o)
			}
		})
	}
	// the task's place, from the platform's variables
	t.Setenv("BULK_SCRIPT", b.ref)
	t.Setenv("BULK_INPUTS", "gs://inputs/ok.ndjson")
	t.Setenv("BULK_RESULTS", "gs://results/r/")
	err := b.task(context.Background(), t, 3, 3, 0, nil)
	if exitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "CLOUD_RUN_TASK_INDEX must be in [0, CLOUD_RUN_TASK_COUNT-1] = [0, 2], got 3") {
		t.Errorf("task 3 of 3: %v (exit %d)", err, exitCode(err))
	}
	// and the BULK_ variables in place of the flags
	if err := b.task(context.Background(), t, 1, 2, 0, nil); err != nil {
		t.Fatalf("the BULK_ variables: %v", err)
	}
	if o := b.object("results", "r/shard-00001-of-00002.ndjson"); !strings.HasPrefix(string(o), `{"index":1,"ok":true,"value":{"n":1,"twice":2}`) {
		t.Errorf("task 1 of 2 wrote %s", o)
	}
}

// A re-run never leaves two answers for one input. Run into one results
// directory with 2 tasks, then with 3: the tasks of 3 refuse, exit 3,
// naming the shards of 2 and writing nothing, since beside them theirs
// would answer every input twice; once those are deleted, the run of 3
// gives one line per input. On GCS alike, and a task whose own shard is
// another job's (another script, the same count) refuses too.
func TestBulkRefusesAnotherRunsShards(t *testing.T) {
	b := newBulkEnv(t)
	inputs := bulkInputs()[:6]
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.ndjson"), filepath.Join(dir, "out")
	if err := os.WriteFile(in, []byte(strings.Join(inputs, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-script", b.ref, "-inputs", in, "-results", out}
	for k := range 2 {
		if err := b.task(context.Background(), t, k, 2, 0, nil, args...); err != nil {
			t.Fatal(err)
		}
	}
	names := func() string {
		entries, _ := os.ReadDir(out)
		var n []string
		for _, e := range entries {
			n = append(n, e.Name())
		}
		return strings.Join(n, " ")
	}
	ofTwo := "shard-00000-of-00002.json shard-00000-of-00002.ndjson shard-00001-of-00002.json shard-00001-of-00002.ndjson"
	if got := names(); got != ofTwo {
		t.Fatalf("the run of 2 left %s", got)
	}
	err := b.task(context.Background(), t, 1, 3, 0, nil, args...)
	for _, want := range []string{"the results " + out + " hold the shards of a run of another task count", "shard-00000-of-00002.json", "this run has 3 tasks", "two answers", "a results prefix of its own", "shard-*-of-00002.*"} {
		if exitCode(err) != 3 || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("a task of 3 beside the shards of 2: %v (exit %d), want exit 3 saying %q", err, exitCode(err), want)
		}
	}
	if got := names(); got != ofTwo {
		t.Errorf("the refused task left %s", got)
	}
	for _, n := range strings.Fields(ofTwo) {
		if err := os.Remove(filepath.Join(out, n)); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	for k := range 3 {
		if err := b.task(context.Background(), t, k, 3, 0, nil, args...); err != nil {
			t.Fatal(err)
		}
	}
	shards, _ := filepath.Glob(filepath.Join(out, "shard-*-of-*.ndjson")) // terraform/README.md's read
	for _, s := range shards {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, linesWithoutUsage(t, b)...)
	}
	if got := strings.Trim(fmt.Sprint(indices(t, all)), "[]"); got != "0 1 2 3 4 5" {
		t.Errorf("the shards of the run of 3 hold the indices %s, want each input's once", got)
	}

	// on GCS: the shards of a run of 2 beside a task of 3
	b.put("inputs", "six.ndjson", inputs...)
	b.put("results", "gcs/shard-00000-of-00002.ndjson", inputs[0])
	b.put("results", "gcs/shard-00000-of-00002.json", `{}`)
	b.put("results", "gcs/notes.txt", `not a shard`)
	err = b.task(context.Background(), t, 0, 3, 0, nil, "-script", b.ref, "-inputs", "gs://inputs/six.ndjson", "-results", "gs://results/gcs/")
	if exitCode(err) != 3 || !strings.Contains(fmt.Sprint(err), "gs://results/gcs/ hold the shards of a run of another task count (shard-00000-of-00002.json, shard-00000-of-00002.ndjson)") {
		t.Errorf("a task of 3 beside the shards of 2 on GCS: %v (exit %d)", err, exitCode(err))
	}
	if o := b.object("results", "gcs/shard-00000-of-00003.ndjson"); o != nil {
		t.Errorf("the refused task wrote %s", o)
	}
	// its own shard, another job's: another script over these inputs
	other := "sha256:" + strings.Repeat("1", 64)
	b.put("results", "own/shard-00000-of-00001.json", `{"shard":0,"shards":1,"scriptRef":"`+other+`","inputs":"gs://inputs/six.ndjson"}`)
	err = b.task(context.Background(), t, 0, 1, 0, nil, "-script", b.ref, "-inputs", "gs://inputs/six.ndjson", "-results", "gs://results/own")
	if exitCode(err) != 3 || !strings.Contains(fmt.Sprint(err), "hold shard 0 of another run: its manifest gs://results/own/shard-00000-of-00001.json says script "+other) {
		t.Errorf("a task whose shard is another script's: %v (exit %d)", err, exitCode(err))
	}
	// the same job's: replaced
	b.put("results", "own/shard-00000-of-00001.json", `{"shard":0,"shards":1,"scriptRef":"`+b.ref+`","inputs":"gs://inputs/six.ndjson"}`)
	if err := b.task(context.Background(), t, 0, 1, 0, nil, "-script", b.ref, "-inputs", "gs://inputs/six.ndjson", "-results", "gs://results/own/"); err != nil {
		t.Errorf("a re-run of the same job: %v", err)
	}
}

// A results place the task may not write fails it before its shard runs,
// exit 3 when no retry can mend it (a refusal, a path that is a file) and
// exit 1 when one can (a 503); a STORE_URL directory that is not there is
// the configuration's mistake, exit 2. Nothing runs: no engine starts.
func TestBulkRefusesBeforeItRuns(t *testing.T) {
	b := newBulkEnv(t)
	b.put("inputs", "ok.ndjson", `{"n":0}`, `{"n":1}`)
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOG_LEVEL", "info")
	run := func(t *testing.T, results string, exit int, want ...string) {
		t.Helper()
		stderr := &syncBuffer{}
		err := b.task(context.Background(), t, 0, 1, 0, stderr, "-script", b.ref, "-inputs", "gs://inputs/ok.ndjson", "-results", results)
		if exitCode(err) != exit {
			t.Errorf("%v: exit %d, want %d", err, exitCode(err), exit)
		}
		for _, w := range want {
			if !strings.Contains(fmt.Sprint(err), w) {
				t.Errorf("%v does not say %q", err, w)
			}
		}
		if strings.Contains(stderr.String(), `"message":"engine warm"`) || strings.Contains(stderr.String(), `"message":"bulk shard"`) {
			t.Errorf("the task ran before it failed:\n%s", stderr)
		}
	}
	t.Run("results a file", func(t *testing.T) {
		run(t, filepath.Join(file, "out"), 3, "the results "+filepath.Join(file, "out")+" cannot be written", "not a directory")
	})
	t.Run("results refused", func(t *testing.T) {
		b.failResults.Store(http.StatusForbidden)
		defer b.failResults.Store(0)
		run(t, "gs://results/refused/", 3, "the results gs://results/refused/ cannot be written", "403")
	})
	t.Run("results unavailable for a moment", func(t *testing.T) {
		b.failResults.Store(http.StatusServiceUnavailable)
		defer b.failResults.Store(0)
		run(t, "gs://results/later/", 1, "the results gs://results/later/ cannot be written (perhaps for a moment)", "503")
	})
	t.Run("no bucket", func(t *testing.T) {
		run(t, "gs://no-such-bucket/r/", 3, "the results gs://no-such-bucket/r/ cannot be written")
	})
	t.Run("store directory not there", func(t *testing.T) {
		t.Setenv("STORE_URL", filepath.Join(dir, "no-store"))
		run(t, "gs://results/r/", 2, "STORE_URL", filepath.Join(dir, "no-store")+" does not exist")
	})
	if o := b.object("results", "r/shard-00000-of-00001.writable"); o != nil {
		t.Errorf("a probe was left: %s", o)
	}
}

// bulk's line on stdout counts the outcomes as a person reads them, not
// as Go prints a map.
func TestBulkOutcomesText(t *testing.T) {
	for _, tc := range []struct {
		outcomes map[string]int
		want     string
	}{
		{map[string]int{"scriptError": 1, "ok": 8, "limitExceeded": 2}, "ok 8, limitExceeded 2, scriptError 1"},
		{map[string]int{"scriptError": 3}, "scriptError 3"},
		{map[string]int{}, "none"},
	} {
		if got := outcomesText(tc.outcomes); got != tc.want {
			t.Errorf("outcomesText(%v) = %q, want %q", tc.outcomes, got, tc.want)
		}
	}
}

// shardLines are a shard's lines, each with its newline, by index.
func shardLines(t *testing.T, results []byte) map[int]string {
	t.Helper()
	out := map[int]string{}
	for l := range strings.Lines(string(results)) {
		bl, err := api.DecodeBatchLine([]byte(strings.TrimSuffix(l, "\n")))
		if err != nil || bl.Summary != nil {
			t.Fatalf("%q: %v", l, err)
		}
		out[bl.Index] = l
	}
	return out
}

// evaluated are the indices of the inputs a task's log says it ran (their
// evaluation lines), in order.
func evaluated(t *testing.T, log string) []int {
	t.Helper()
	var out []int
	for _, l := range evaluationLines(t, log) {
		i, ok := l["index"].(float64)
		if !ok {
			t.Fatalf("an evaluation line without its index: %v", l)
		}
		out = append(out, int(i))
	}
	slices.Sort(out)
	return out
}

// A task run again in the same run resumes its shard. Stopped the moment
// its first run ends (every clock frozen by -deterministic, 17 never ends
// by itself before its wall clock, and the inputs after it wait for a
// slot), a task leaves answered lines and not-run ones; run again, it runs
// only the not-run ones (their evaluation lines are the only ones it
// logs), keeps the others byte for byte, usage and all, and writes the
// whole shard with a manifest counting all of it. Run once more, it has
// nothing to run and the shard stands as it is; with -redo it runs every
// input, and the answers are the resumed shard's but for their usage.
func TestBulkTaskResumes(t *testing.T) {
	b := newBulkEnv(t)
	b.put("inputs", "all.ndjson", bulkInputs()...)
	args := []string{"-script", b.ref, "-inputs", "gs://inputs/all.ndjson", "-results", "gs://results/resume/", "-deterministic", "-wall-clock", "2s"}
	const k, n = 2, 3 // [16, 25), whose 17 is slow
	shard := func() (results, manifest []byte) {
		return b.object("results", "resume/shard-00002-of-00003.ndjson"), b.object("results", "resume/shard-00002-of-00003.json")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncBuffer{onWrite: func(s string) {
		if strings.Contains(s, `"message":"sandbox evaluation"`) { // a run's end, before it returns
			cancel()
		}
	}}
	t.Setenv("LOG_LEVEL", "debug")
	err := b.task(ctx, t, k, n, 0, stderr, args...)
	t.Setenv("LOG_LEVEL", "info")
	if exitCode(err) != 1 || !strings.Contains(fmt.Sprint(err), "not run") {
		t.Fatalf("a task stopped midway: %v (exit %d), want exit 1 naming the inputs not run", err, exitCode(err))
	}
	res0, man0 := shard()
	m0 := manifestOf(t, man0, res0)
	lines0 := shardLines(t, res0)
	var answered, notRun []int
	for i := 16; i < 25; i++ {
		if strings.Contains(lines0[i], `"notRun":true`) {
			notRun = append(notRun, i)
		} else {
			answered = append(answered, i)
		}
	}
	if len(answered) == 0 || len(notRun) == 0 || m0.NotRun != len(notRun) || m0.Kept != 0 {
		t.Fatalf("the stopped task answered %v and left %v not run, manifest %+v: want both", answered, notRun, m0)
	}

	stderr = &syncBuffer{}
	if err := b.task(context.Background(), t, k, n, 1, stderr, args...); err != nil {
		t.Fatal(err)
	}
	res1, man1 := shard()
	m1 := manifestOf(t, man1, res1)
	if got := evaluated(t, stderr.String()); !slices.Equal(got, notRun) {
		t.Errorf("the resumed task ran %v, want the inputs left not run, %v", got, notRun)
	}
	if !strings.Contains(stderr.String(), `"message":"bulk shard resumed"`) {
		t.Errorf("the resumed task does not say so:\n%s", stderr)
	}
	lines1 := shardLines(t, res1)
	for _, i := range answered {
		if lines1[i] != lines0[i] {
			t.Errorf("input %d's answer was not kept as it was:\n got %s\nwant %s", i, lines1[i], lines0[i])
		}
	}
	if m1.Kept != len(answered) || m1.Attempt != 1 || m1.Items != 9 || m1.NotRun != 0 || m1.Problems != 0 ||
		m1.Outcomes["ok"]+m1.Outcomes["limitExceeded"] != 9 || len(lines1) != 9 || !reflect.DeepEqual(m1.Identity, m0.Identity) {
		t.Errorf("the resumed shard's manifest: %+v", m1)
	}

	stderr = &syncBuffer{}
	if err := b.task(context.Background(), t, k, n, 2, stderr, args...); err != nil {
		t.Fatal(err)
	}
	if res2, man2 := shard(); !bytes.Equal(res2, res1) || !bytes.Equal(man2, man1) {
		t.Errorf("a task with nothing left to run rewrote its shard:\n%s\n%s", man2, man1)
	}
	if got := evaluated(t, stderr.String()); len(got) != 0 {
		t.Errorf("a task with nothing left to run ran %v", got)
	}

	stderr = &syncBuffer{}
	if err := b.task(context.Background(), t, k, n, 3, stderr, append(args, "-redo")...); err != nil {
		t.Fatal(err)
	}
	res3, man3 := shard()
	m3 := manifestOf(t, man3, res3)
	if got := evaluated(t, stderr.String()); len(got) != 9 || m3.Kept != 0 || m3.Attempt != 3 {
		t.Errorf("-redo ran %v, kept %d", got, m3.Kept)
	}
	if got, want := linesWithoutUsage(t, res3), linesWithoutUsage(t, res1); !slices.Equal(got, want) {
		t.Errorf("the resumed shard's answers are not a whole run's:\n%s\nwant\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// A resumed shard's kept lines and new ones go in index order, wherever
// the inputs to run again are: an earlier attempt whose lines 0 and 4 are
// not run and 2 a problem (the service failed to answer it) has those
// three run and 1 and 3 kept. A task runs its shard whole, saying why,
// when the earlier attempt's shard is not one it can trust or is another
// run's: results whose bytes are not the manifest's, results not there, a
// manifest of another evaluation; and with no manifest, or with -redo.
func TestBulkResumeKeepsWhatItCanTrust(t *testing.T) {
	b := newBulkEnv(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.ndjson"), filepath.Join(dir, "out")
	if err := os.WriteFile(in, []byte(`{"n":0}`+"\n"+`{"n":1}`+"\n"+`{"n":2}`+"\n"+`{"n":3}`+"\n"+`{"n":4}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	results, manifest := filepath.Join(out, "shard-00000-of-00001.ndjson"), filepath.Join(out, "shard-00000-of-00001.json")
	args := []string{"-script", b.ref, "-inputs", in, "-results", out}
	attempt := 0
	// runs the task, and says what it ran and what it wrote
	task := func(extra ...string) (ran []int, m bulk.Manifest, lines map[int]string, log string) {
		t.Helper()
		stderr := &syncBuffer{}
		if err := b.task(context.Background(), t, 0, 1, attempt, stderr, append(args, extra...)...); err != nil {
			t.Fatal(err)
		}
		attempt++
		res, err := os.ReadFile(results)
		if err != nil {
			t.Fatal(err)
		}
		man, err := os.ReadFile(manifest)
		if err != nil {
			t.Fatal(err)
		}
		return evaluated(t, stderr.String()), manifestOf(t, man, res), shardLines(t, res), stderr.String()
	}
	t.Setenv("LOG_LEVEL", "info")
	_, m, whole, _ := task()

	// the earlier attempt as a stopped task with a failing backend leaves it
	var forged []byte
	for i := range 5 {
		switch i {
		case 0, 4:
			forged, _ = api.AppendBatchLine(forged, api.BatchLine{Index: i, NotRun: "the task stopped"})
		case 2:
			forged, _ = api.AppendBatchLine(forged, api.BatchLine{Index: i, Problem: api.NewProblem(api.ProblemBackendUnavailable, "the engine did not answer")})
		default:
			forged = append(forged, whole[i]...)
		}
	}
	sum := sha256.Sum256(forged)
	m.ResultsBytes, m.ResultsSHA256 = int64(len(forged)), hex.EncodeToString(sum[:])
	write := func(res []byte, m bulk.Manifest) {
		t.Helper()
		man, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(results, res, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(manifest, man, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(forged, m)
	ran, m2, lines, _ := task()
	if !slices.Equal(ran, []int{0, 2, 4}) || m2.Kept != 2 || m2.Outcomes["ok"] != 5 || m2.Problems != 0 || m2.NotRun != 0 || m2.Items != 5 {
		t.Errorf("resumed from lines 0, 2 and 4 without an answer: ran %v, manifest %+v", ran, m2)
	}
	for i := range 5 {
		if (i == 1 || i == 3) && lines[i] != whole[i] || !strings.HasPrefix(lines[i], fmt.Sprintf(`{"index":%d,"ok":true,`, i)) {
			t.Errorf("line %d: %s", i, lines[i])
		}
	}

	for _, tc := range []struct {
		name   string
		damage func()
		extra  []string
		why    string
	}{
		{"results not the manifest's", func() {
			res, _ := os.ReadFile(results)
			write(bytes.Replace(res, []byte(`"n":1`), []byte(`"n":7`), 1), m2) // the same length
		}, nil, "its results object's SHA-256 is "},
		{"results not there", func() { os.Remove(results) }, nil, "its results object is not there"},
		{"another evaluation", func() {}, []string{"-wall-clock", "4s"}, `its manifest is of another run: it says evaluation {"limits":{"wallClockMs":5000,"memoryBytes":67108864}}, and this run's is {"limits":{"wallClockMs":4000,`},
		{"no manifest", func() { os.Remove(manifest) }, nil, ""},
		{"-redo", func() {}, []string{"-redo"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.damage()
			ran, m, _, log := task(tc.extra...)
			if len(ran) != 5 || m.Kept != 0 || m.Outcomes["ok"] != 5 {
				t.Errorf("ran %v, manifest %+v: want the shard run whole", ran, m)
			}
			var why []string
			for l := range strings.Lines(log) {
				var line struct{ Message, Why string }
				if json.Unmarshal([]byte(l), &line) == nil && line.Message == "bulk shard run whole" {
					why = append(why, line.Why)
				}
			}
			if tc.why != "" && (len(why) != 1 || !strings.Contains(why[0], tc.why)) || tc.why == "" && len(why) != 0 {
				t.Errorf("the task's log says it ran whole because %q, want %q:\n%s", why, tc.why, log)
			}
		})
	}
}

// check runs bulk-check on results, and says what it printed.
func check(t *testing.T, results string) (stdout, stderr string, exit int) {
	t.Helper()
	// long enough for its few tries of a failing request, and a bound on
	// a check that would try forever
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"bulk-check", "-results", results}, nil, &out, &errOut)
	return out.String(), errOut.String() + fmt.Sprint(err), exitCode(err)
}

// bulk-check passes a whole job, printing every input's line once, in
// index order, the shards concatenated as they are; it exits 4 for a
// whole job with inputs not run, and 3, printing nothing, for each kind
// of damage, naming the shard and what is wrong: a manifest missing,
// shards of another task count, a manifest of another run, a gap or an
// overlap, a results object of another length, and results whose bytes
// or lines are not the manifest's (found as they are read, after the
// shards before them were printed). On GCS alike, and a results bucket
// that fails for a moment is exit 1.
func TestBulkCheck(t *testing.T) {
	b := newBulkEnv(t)
	inputs := bulkInputs()[:12]
	dir := t.TempDir()
	in, good := filepath.Join(dir, "in.ndjson"), filepath.Join(dir, "good")
	if err := os.WriteFile(in, []byte(strings.Join(inputs, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var whole []byte
	for k := range 3 {
		if err := b.task(context.Background(), t, k, 3, 0, nil, "-script", b.ref, "-inputs", in, "-results", good); err != nil {
			t.Fatal(err)
		}
		res, err := os.ReadFile(filepath.Join(good, fmt.Sprintf("shard-%05d-of-00003.ndjson", k)))
		if err != nil {
			t.Fatal(err)
		}
		whole = append(whole, res...)
	}
	stdout, stderr, exit := check(t, good)
	if exit != 0 || stdout != string(whole) || !strings.Contains(stderr, "one run of 3 shards, 12 inputs of script "+b.ref+": ok 11, scriptError 1; 0 problems, 0 not run") {
		t.Fatalf("a whole job: exit %d, stderr %s, stdout\n%s", exit, stderr, stdout)
	}
	if got := strings.Trim(fmt.Sprint(indices(t, strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"))), "[]"); got != "0 1 2 3 4 5 6 7 8 9 10 11" {
		t.Errorf("the lines printed have the indices %s", got)
	}

	name := func(k int, ext string) string { return fmt.Sprintf("shard-%05d-of-00003.%s", k, ext) }
	// edit rewrites shard k's manifest through change
	edit := func(t *testing.T, place string, k int, change func(*bulk.Manifest)) {
		t.Helper()
		p := filepath.Join(place, name(k, "json"))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m bulk.Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		change(&m)
		if b, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// results rewrites shard k's results object through change, and its
	// manifest to describe the new bytes
	results := func(t *testing.T, place string, k int, change func([]byte) []byte) {
		t.Helper()
		p := filepath.Join(place, name(k, "ndjson"))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b = change(b)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		edit(t, place, k, func(m *bulk.Manifest) { m.ResultsBytes, m.ResultsSHA256 = int64(len(b)), hex.EncodeToString(sum[:]) })
	}
	other := "sha256:" + strings.Repeat("1", 64)
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, place string)
		exit    int
		want    []string
		printed string // what is printed before the damage is found
	}{
		{"a manifest missing", func(t *testing.T, place string) { os.Remove(filepath.Join(place, name(1, "json"))) }, 3,
			[]string{"not one whole run's", "shard 1 (shard-00001-of-00003): no manifest: its task has not written its shard"}, ""},
		{"a results object missing", func(t *testing.T, place string) { os.Remove(filepath.Join(place, name(2, "ndjson"))) }, 3,
			[]string{"shard 2 (shard-00002-of-00003): its results object shard-00002-of-00003.ndjson is not there"}, ""},
		{"a shard of another task count", func(t *testing.T, place string) {
			os.WriteFile(filepath.Join(place, "shard-00001-of-00002.ndjson"), []byte(inputs[0]+"\n"), 0o644)
		}, 3, []string{"the shards of runs of several task counts: 1 shards of 2 tasks (shard-*-of-00002.*), 3 shards of 3 tasks (shard-*-of-00003.*)"}, ""},
		{"a manifest of another script", func(t *testing.T, place string) {
			edit(t, place, 2, func(m *bulk.Manifest) { m.ScriptRef = other })
		}, 3, []string{"shard 2 (shard-00002-of-00003): its manifest is of another run than shard 0's: it says scriptRef " + other + ", and shard 0's " + b.ref}, ""},
		{"a manifest of other inputs", func(t *testing.T, place string) {
			edit(t, place, 0, func(m *bulk.Manifest) { m.InputsSHA256 = strings.Repeat("0", 64) })
		}, 3, []string{"shard 1 (shard-00001-of-00003): its manifest is of another run than shard 0's: it says inputsSha256 ", "shard 2 (shard-00002-of-00003): its manifest"}, ""},
		{"a gap", func(t *testing.T, place string) {
			results(t, place, 1, func(b []byte) []byte { _, rest, _ := bytes.Cut(b, []byte("\n")); return rest })
			edit(t, place, 1, func(m *bulk.Manifest) { m.Start++; m.Items-- })
		}, 3, []string{"shard 1 (shard-00001-of-00003): it begins at input 5 where the shards before end at 4: inputs [4, 5) have no line"}, ""},
		{"an overlap", func(t *testing.T, place string) {
			edit(t, place, 0, func(m *bulk.Manifest) { m.End++; m.Items++ })
		}, 3, []string{"shard 1 (shard-00001-of-00003): it begins at input 4 where the shards before end at 5: inputs [4, 5) have two lines"}, ""},
		{"a results object of another length", func(t *testing.T, place string) {
			p := filepath.Join(place, name(1, "ndjson"))
			b, _ := os.ReadFile(p)
			os.WriteFile(p, append(b, b[:20]...), 0o644)
		}, 3, []string{"shard 1 (shard-00001-of-00003): its results object is "}, ""},
		{"results not the manifest's bytes", func(t *testing.T, place string) {
			p := filepath.Join(place, name(1, "ndjson"))
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"n":5`), []byte(`"n":9`), 1), 0o644) // the same length
		}, 3, []string{"shard 1: its results object's SHA-256 is ", "not the object the manifest describes", "the lines written before this was found are not the job's results"}, "0 1 2 3 4 5 6 7"},
		{"lines out of order", func(t *testing.T, place string) {
			results(t, place, 2, func(b []byte) []byte {
				l := strings.SplitAfter(string(b), "\n")
				l[0], l[1] = l[1], l[0]
				return []byte(strings.Join(l, ""))
			})
		}, 3, []string{"shard 2: its results object's line 1 is not input 8's"}, "0 1 2 3 4 5 6 7"},
		{"inputs not run", func(t *testing.T, place string) {
			results(t, place, 0, func(b []byte) []byte {
				nr, _ := api.AppendBatchLine(nil, api.BatchLine{Index: 0, NotRun: "the task stopped"})
				_, rest, _ := bytes.Cut(b, []byte("\n"))
				return append(nr, rest...)
			})
			edit(t, place, 0, func(m *bulk.Manifest) { m.NotRun, m.Outcomes["ok"] = 1, m.Outcomes["ok"]-1 })
		}, 4, []string{"ok 10, scriptError 1; 0 problems, 1 not run", "1 inputs are not run and 0 answered with a problem: execute the job again"}, "0 1 2 3 4 5 6 7 8 9 10 11"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			place := filepath.Join(t.TempDir(), "results")
			if err := os.CopyFS(place, os.DirFS(good)); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, place)
			stdout, stderr, exit := check(t, place)
			if exit != tc.exit {
				t.Errorf("exit %d, want %d: %s", exit, tc.exit, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("standard error does not say %q:\n%s", w, stderr)
				}
			}
			var printed []string
			if stdout != "" {
				printed = strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			}
			if got := strings.Trim(fmt.Sprint(indices(t, printed)), "[]"); got != tc.printed {
				t.Errorf("printed the lines of %q, want %q", got, tc.printed)
			}
		})
	}

	// on GCS: a whole job, then a shard of another count beside it, and
	// the bucket failing for a moment
	b.put("inputs", "twelve.ndjson", inputs...)
	whole = nil
	for k := range 2 {
		if err := b.task(context.Background(), t, k, 2, 0, nil, "-script", b.ref, "-inputs", "gs://inputs/twelve.ndjson", "-results", "gs://results/checked/"); err != nil {
			t.Fatal(err)
		}
		whole = append(whole, b.object("results", fmt.Sprintf("checked/shard-%05d-of-00002.ndjson", k))...)
	}
	if stdout, stderr, exit := check(t, "gs://results/checked/"); exit != 0 || stdout != string(whole) {
		t.Errorf("a whole job on GCS: exit %d, %s, stdout\n%s", exit, stderr, stdout)
	}
	b.failResults.Store(http.StatusServiceUnavailable)
	if stdout, stderr, exit := check(t, "gs://results/checked/"); exit != 1 || stdout != "" || !strings.Contains(stderr, "a retry can help") || b.failed.Load() != 4 {
		t.Errorf("a bucket that fails for a moment: exit %d after %d requests, want 1 after 4: %s, stdout\n%s", exit, b.failed.Load(), stderr, stdout)
	}
	b.failResults.Store(0)
	b.put("results", "checked/shard-00002-of-00003.json", `{}`)
	if stdout, stderr, exit := check(t, "gs://results/checked/"); exit != 3 || stdout != "" || !strings.Contains(stderr, "the results gs://results/checked/ are not one whole run's") || !strings.Contains(stderr, "several task counts") {
		t.Errorf("a shard of another count on GCS: exit %d, %s, stdout\n%s", exit, stderr, stdout)
	}
	if _, stderr, exit := check(t, "gs://results/nothing/"); exit != 3 || !strings.Contains(stderr, "no shard-KKKKK-of-NNNNN.json or .ndjson is there") {
		t.Errorf("no job: exit %d, %s", exit, stderr)
	}
	if _, stderr, exit := check(t, ""); exit != 2 || !strings.Contains(stderr, "no results: give -results") {
		t.Errorf("no -results: exit %d, %s", exit, stderr)
	}
}
