package handler_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/handler"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
)

const routeBatch = "/v1/evaluations:batch"

// batchLines reads a batch's answer: its lines, each checked by the
// reader clients use, and the raw text of each.
func batchLines(t *testing.T, r response) ([]api.BatchLine, [][]byte) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", r.status, r)
	}
	if ct := r.header.Get("Content-Type"); ct != api.BatchContentType {
		t.Fatalf("Content-Type %q, want %s", ct, api.BatchContentType)
	}
	if !bytes.HasSuffix(r.body, []byte("\n")) {
		t.Fatalf("the answer does not end with a whole line: %q", r.body)
	}
	var lines []api.BatchLine
	var raws [][]byte
	for raw := range bytes.Lines(r.body) {
		raw = bytes.TrimSuffix(raw, []byte("\n"))
		l, err := api.DecodeBatchLine(raw)
		if err != nil {
			t.Fatalf("line %s: %v", raw, err)
		}
		lines = append(lines, l)
		raws = append(raws, raw)
	}
	return lines, raws
}

// wantSummary checks that the last line is the summary, that every other
// line is an input's, in the inputs' order, and that the summary counts
// them; it returns the summary.
func wantSummary(t *testing.T, lines []api.BatchLine, n int) api.BatchSummary {
	t.Helper()
	if len(lines) != n+1 {
		t.Fatalf("%d lines, want %d and the summary", len(lines), n)
	}
	var counted api.BatchSummary
	for i, l := range lines[:n] {
		if l.Summary != nil || l.Index != i {
			t.Fatalf("line %d is %+v, want input %d's", i, l, i)
		}
		counted.Add(l)
	}
	s := lines[n].Summary
	if s == nil {
		t.Fatalf("the last line is %+v, want the summary", lines[n])
	}
	if s.Items != n || s.Problems != counted.Problems || s.NotRun != counted.NotRun || fmt.Sprint(s.Outcomes) != fmt.Sprint(counted.Outcomes) {
		t.Fatalf("summary %+v, the lines count %+v", *s, counted)
	}
	// each line's times are rounded to the microsecond
	near := func(a, b time.Duration) bool { return (a - b).Abs() <= time.Duration(n+1)*time.Microsecond }
	if !near(s.Usage.CPU, counted.Usage.CPU) || !near(s.Usage.Run, counted.Usage.Run) || s.Usage.CPUBudgetUsed != counted.Usage.CPUBudgetUsed {
		t.Fatalf("summary usage %+v is not the sum of the lines' %+v", s.Usage, counted.Usage)
	}
	return *s
}

// Each input's line is, besides its index, the answer POST /v1/evaluations
// gives that input alone: values, each typed failure, logs; and each run is
// fresh (a global set by one run is not seen by the next).
func TestBatchAnswersEachInputAsAlone(t *testing.T) {
	v := newEnv(t)
	script := `
globalThis.runs = (globalThis.runs || 0) + 1;
console.log("input", JSON.stringify(input));
if (input && input.throw) throw new TypeError(input.throw);
if (input && input.spin) { while (true) {} }
if (input && input.none) null; else if (input && input.big) 'x'.repeat(100000); else ({runs: globalThis.runs, input})`
	ref := v.put(script)
	bigInput := json.RawMessage(`"` + strings.Repeat("x", int(testLimits.MaxInputBytes)) + `"`)
	inputs := []json.RawMessage{
		json.RawMessage(`{"a":1}`), json.RawMessage(`{"throw":"bad"}`), json.RawMessage(`null`),
		json.RawMessage(`{"spin":true}`), json.RawMessage(`{"big":true}`), bigInput, json.RawMessage(`[1, "\ud800"]`),
		json.RawMessage(`{"none":true}`), // a null value, which the document's line must accept
	}
	limits := map[string]any{"wallClockMs": 300}
	r := v.post(routeBatch, map[string]any{"scriptRef": ref, "inputs": inputs, "captureLogs": true, "limits": limits})
	lines, raws := batchLines(t, r)
	sum := wantSummary(t, lines, len(inputs))
	if sum.Outcomes["ok"] != 4 || sum.Outcomes["scriptError"] != 1 || sum.Outcomes["limitExceeded"] != 2 || sum.Outcomes["inputTooLarge"] != 1 {
		t.Errorf("outcomes %v", sum.Outcomes)
	}
	for i, in := range inputs {
		alone := v.post("/v1/evaluations", map[string]any{"scriptRef": ref, "input": in, "captureLogs": true, "limits": limits})
		if alone.status != http.StatusOK {
			t.Fatalf("input %d alone: %s", i, alone)
		}
		line, _, err := servicetest.SplitUsage("/v1/evaluations", raws[i])
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		want := fmt.Sprintf(`{"index":%d,%s`, i, bytes.TrimPrefix(bytes.TrimSuffix(alone.body, []byte("\n")), []byte("{")))
		if string(line) != want {
			t.Errorf("input %d: line %s\nalone it is %s", i, line, want)
		}
	}
}

// Runs go in parallel on the instance's free slots, and the lines still
// come out in the inputs' order; a shape check applies to each input.
func TestBatchKeepsTheInputsOrder(t *testing.T) {
	v := newEnv(t, withConfig(func(c *handler.Config) { c.Limits.MaxConcurrent = 3 }))
	// the first inputs take longest, so that later ones end first
	ref := v.put(`const end = Date.now() + input.ms; while (Date.now() < end) {} ({ms: input.ms})`)
	var inputs []any
	for i := range 12 {
		inputs = append(inputs, map[string]any{"ms": 5 * (12 - i)})
	}
	inputs[5] = "no ms"
	shape := shapeHash(t, `{"ms":1}`)
	r := v.post(routeBatch, map[string]any{"scriptRef": ref, "inputs": inputs, "expectedOutputShapeHash": shape})
	lines, _ := batchLines(t, r)
	sum := wantSummary(t, lines, len(inputs))
	if sum.Outcomes["ok"] != 11 || sum.Outcomes["shapeMismatch"] != 1 || lines[5].Answer.Failure == nil {
		t.Errorf("outcomes %v, line 5 %+v", sum.Outcomes, lines[5].Answer)
	}
	for i, l := range lines[:len(inputs)] {
		if i != 5 && string(l.Answer.Value) != fmt.Sprintf(`{"ms":%d}`, 5*(12-i)) {
			t.Errorf("line %d: %s", i, l.Answer.Value)
		}
	}
}

// The bounds: more inputs than maxBatchItems is a 413 naming it, before
// anything runs; the body is bounded as every request's; an empty batch is
// its summary; a batch without inputs, or whose inputs are not an array, is
// refused.
func TestBatchBounds(t *testing.T) {
	v := newEnv(t, withConfig(func(c *handler.Config) { c.Limits.MaxBatchItems = 3 }))
	ref := v.put(`input`)
	r := v.post(routeBatch, map[string]any{"scriptRef": ref, "inputs": []int{1, 2, 3, 4, 5}})
	p := wantProblem(t, r, http.StatusRequestEntityTooLarge, "too-many-inputs", false, "maxBatchItems of 3")
	if p["limit"] != "maxBatchItems" || p["limitValue"] != float64(3) || p["field"] != "inputs" || p["offset"] != float64(len(`{"inputs":[1,2,3,`)) {
		t.Errorf("problem %v", p)
	}
	if v.backend.runsBegun() != 0 {
		t.Errorf("%d runs started for a refused batch", v.backend.runsBegun())
	}
	lines, _ := batchLines(t, v.post(routeBatch, map[string]any{"scriptRef": ref, "inputs": []int{1, 2, 3}}))
	wantSummary(t, lines, 3)
	lines, _ = batchLines(t, v.post(routeBatch, map[string]any{"scriptRef": ref, "inputs": []int{}}))
	wantSummary(t, lines, 0)

	wantProblem(t, v.post(routeBatch, map[string]any{"scriptRef": ref}), http.StatusBadRequest, "invalid-request", false, `"inputs" is required`)
	wantProblem(t, v.post(routeBatch, map[string]any{"scriptRef": ref, "inputs": map[string]int{"a": 1}}), http.StatusBadRequest, "invalid-request", false, `"inputs" must be an array`)
	wantProblem(t, v.post(routeBatch, map[string]any{"scriptRef": ref, "input": 1, "inputs": []int{}}), http.StatusBadRequest, "unknown-field", false, `"input"`)
	// an input at fault is named by its index, and nothing runs
	p = wantProblem(t, v.post(routeBatch, `{"scriptRef":"`+ref+`","inputs":[1,2,{"a":}]}`), http.StatusBadRequest, "malformed-json", false,
		"inputs[2] has unexpected '}'", "byte offset 106")
	if p["field"] != "inputs[2]" || p["offset"] != float64(106) {
		t.Errorf("problem %v", p)
	}
	p = wantProblem(t, v.post(routeBatch, `{"scriptRef":"`+ref+`","inputs":[1,2,{"a":1,"a":2}]}`), http.StatusBadRequest, "duplicate-key", false,
		`inputs[2] has the key "a" twice`, "byte offset 108")
	if p["field"] != "inputs[2].a" {
		t.Errorf("problem %v", p)
	}
	if v.backend.runsBegun() != 3 {
		t.Errorf("%d runs started, want the 3 of the one batch answered", v.backend.runsBegun())
	}
	big := fmt.Sprintf(`{"scriptRef":%q,"inputs":["%s"]}`, ref, strings.Repeat("x", int(testLimits.MaxRequestBytes)))
	wantProblem(t, v.post(routeBatch, big), http.StatusRequestEntityTooLarge, "request-too-large", false, "maxRequestBytes")
}

// A script the store does not have is each input's answer, as it would be
// alone: the same line, usage included (the memory limit the run would
// have had, the read that found the script missing), and an input over
// maxInputBytes answered inputTooLarge, as alone, before any read; the
// summary counts the batch's one read once. A script the store cannot give
// is the batch's problem, before any line.
func TestBatchScriptNotRun(t *testing.T) {
	v := newEnv(t)
	missing := contentref.RefOf([]byte("never stored")).String()
	const read = 2 * time.Millisecond // a read long enough to show in the usage
	v.store.set(missing, func() ([]byte, error) { time.Sleep(read); return nil, contentref.ErrNotFound })
	bigInput := json.RawMessage(`"` + strings.Repeat("x", int(testLimits.MaxInputBytes)) + `"`)
	inputs := []json.RawMessage{json.RawMessage(`1`), bigInput, json.RawMessage(`{"a":2}`)}
	limits := map[string]any{"memoryBytes": 2 * testLimits.MaxMemoryBytes} // run at the maximum
	lines, raws := batchLines(t, v.post(routeBatch, map[string]any{"scriptRef": missing, "inputs": inputs, "limits": limits}))
	sum := wantSummary(t, lines, len(inputs))
	if sum.Outcomes["scriptMissing"] != 2 || sum.Outcomes["inputTooLarge"] != 1 {
		t.Errorf("outcomes %v", sum.Outcomes)
	}
	for i, in := range inputs {
		alone := v.post("/v1/evaluations", map[string]any{"scriptRef": missing, "input": in, "limits": limits})
		line, u, err := servicetest.SplitUsage("/v1/evaluations", raws[i])
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		wantU := alone.usage
		if w := `{"index":` + strconv.Itoa(i) + `,` + strings.TrimPrefix(strings.TrimSpace(string(alone.body)), "{"); string(line) != w {
			t.Errorf("input %d: line %s\nalone it is %s", i, line, w)
		}
		// the same usage, but for how long its read took
		if (u.Fetch >= read) != (wantU.Fetch >= read) || u.MemoryLimitBytes != testLimits.MaxMemoryBytes {
			t.Errorf("input %d: usage %+v; alone %+v", i, *u, *wantU)
		}
		got, aloneU := *u, *wantU
		got.Fetch, aloneU.Fetch = 0, 0
		if got != aloneU {
			t.Errorf("input %d: usage %+v; alone %+v", i, *u, *wantU)
		}
	}
	if u := lines[0].Answer.Usage; sum.Usage.Fetch != u.Fetch || sum.Usage.Fetch < read || sum.Usage.MemoryLimitBytes != testLimits.MaxMemoryBytes {
		t.Errorf("summary usage %+v; the one read of the script and the runs' memory limit are %+v's", sum.Usage, *u)
	}

	ref := v.put("1")
	v.store.set(ref, func() ([]byte, error) { return nil, fmt.Errorf("the bucket is on fire: %w", contentref.ErrUnavailable) })
	wantProblem(t, v.post(routeBatch, map[string]any{"scriptRef": ref, "inputs": []int{1}}), http.StatusServiceUnavailable, "store-unavailable", true)
}

// When the server's request timeout passes, the batch stops: each input
// whose run did not end is answered not run, the runs in progress are
// stopped, and the summary still ends the answer.
func TestBatchStopsAtTheDeadline(t *testing.T) {
	v := newEnv(t, withConfig(func(c *handler.Config) { c.Limits.RequestTimeout = 1500 * time.Millisecond }))
	ref := v.put(`const end = Date.now() + 200; while (Date.now() < end) {} input`)
	inputs := make([]int, 40) // 8 s of runs, one at a time
	lines, _ := batchLines(t, v.post(routeBatch, map[string]any{"scriptRef": ref, "inputs": inputs}))
	sum := wantSummary(t, lines, len(inputs))
	if sum.NotRun == 0 || sum.NotRun+sum.Outcomes["ok"] != len(inputs) {
		t.Fatalf("summary %+v", sum)
	}
	for i, l := range lines[:len(inputs)] {
		if l.NotRun != "" && !strings.Contains(l.NotRun, "request timeout of 1.5s") {
			t.Errorf("line %d: %q", i, l.NotRun)
		}
		if i > 0 && l.NotRun == "" && lines[i-1].NotRun != "" {
			t.Errorf("input %d answered after input %d was not run", i, i-1)
		}
	}
	if n := v.backend.runsGoing(); n != 0 {
		t.Errorf("%d runs still going after the answer", n)
	}
}

// A client that goes away stops the batch: its runs are stopped, no more
// start, and the request is logged as the client's leaving.
func TestBatchStopsWhenTheClientLeaves(t *testing.T) {
	v := newEnv(t)
	ref := v.put(`const end = Date.now() + 100; while (Date.now() < end) {} input`)
	body, _ := json.Marshal(map[string]any{"scriptRef": ref, "inputs": make([]int, 200)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, v.srv.URL+routeBatch, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := v.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	if l, derr := api.DecodeBatchLine(bytes.TrimSpace(first)); err != nil || derr != nil || l.Index != 0 || l.Answer == nil {
		t.Fatalf("first line %q: %v %v", first, err, derr)
	}
	cancel()
	resp.Body.Close()
	v.awaitLog(t, "request")
	var req499 bool
	for _, l := range v.logs.lines(t, "request") {
		req499 = req499 || l["route"] == routeBatch && l["status"] == float64(499)
	}
	if !req499 {
		t.Errorf("the batch is not logged as the client's leaving:\n%s", v.logs)
	}
	if n := v.backend.runsGoing(); n != 0 {
		t.Errorf("%d runs still going after the batch ended", n)
	}
	if n := v.backend.runsBegun(); n > 50 {
		t.Errorf("%d of 200 runs started: the batch went on after its client left", n)
	}
}

// Each input is logged as an evaluation of its own, with its index, as
// its request alone would be; the batch's request has its request line.
func TestBatchLogsEachInput(t *testing.T) {
	v := newEnv(t)
	ref := v.put(`if (input) throw new Error("no"); 1`)
	batchLines(t, v.post(routeBatch, map[string]any{"scriptRef": ref, "inputs": []bool{false, true}}))
	v.awaitLog(t, "request")
	evals := v.logs.lines(t, "evaluation")
	if len(evals) != 2 {
		t.Fatalf("%d evaluation lines, want 2:\n%s", len(evals), v.logs)
	}
	for i, l := range evals {
		if l["index"] != float64(i) || l["route"] != routeBatch || l["script"] != ref || l["inputBytes"] == nil {
			t.Errorf("line %d: %v", i, l)
		}
	}
	if evals[0]["outcome"] != "ok" || evals[1]["outcome"] != "scriptError" {
		t.Errorf("outcomes %v, %v", evals[0]["outcome"], evals[1]["outcome"])
	}
}
