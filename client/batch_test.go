package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
)

// collect reads a batch's lines, and the error that ended them.
func collect(seq func(func(client.BatchLine, error) bool)) ([]client.BatchLine, error) {
	var lines []client.BatchLine
	for l, err := range seq {
		if err != nil {
			return lines, err
		}
		lines = append(lines, l)
	}
	return lines, nil
}

// Against the real service: each input's line in order, as Evaluations
// answers that input alone, then the summary; a refused batch is the
// service's problem; stopping the iteration early closes the answer.
func TestBatchOnTheService(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the service")
	}
	store := t.TempDir()
	ref := putScript(t, store, `if (input.fail) throw new RangeError("no " + input.n); ({twice: input.n * 2})`)
	s := servicetest.Start(t, servicetest.Options{Env: []string{"STORE_URL=" + store, "MAX_BATCH_ITEMS=50"}})
	c := dial(t, s.URL)
	if c.Limits().MaxBatchItems != 50 {
		t.Fatalf("the service advertises maxBatchItems %d", c.Limits().MaxBatchItems)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var inputs []json.RawMessage
	for i := range 20 {
		inputs = append(inputs, json.RawMessage(fmt.Sprintf(`{"n":%d,"fail":%t}`, i, i%7 == 3)))
	}
	lines, err := collect(c.Batch(ctx, client.BatchRequest{ScriptRef: ref, Inputs: inputs, CaptureLogs: true}))
	if err != nil || len(lines) != len(inputs)+1 {
		t.Fatalf("%d lines, %v", len(lines), err)
	}
	for i, in := range inputs {
		alone, err := c.Evaluations(ctx, client.EvaluationRequest{ScriptRef: ref, Input: in, CaptureLogs: true})
		if err != nil {
			t.Fatal(err)
		}
		got := lines[i].Answer
		if lines[i].Index != i || got == nil || got.OK != alone.OK || string(got.Value) != string(alone.Value) ||
			fmt.Sprint(got.Failure) != fmt.Sprint(alone.Failure) || *got.Logs != *alone.Logs || got.Usage == nil {
			t.Errorf("input %d: line %+v, alone %+v", i, lines[i], alone.EvaluationResponse)
		}
	}
	if sum := lines[len(inputs)].Summary; sum == nil || sum.Items != 20 || sum.Outcomes["ok"] != 17 || sum.Outcomes["scriptError"] != 3 {
		t.Errorf("summary %+v", sum)
	}

	_, err = collect(c.Batch(ctx, client.BatchRequest{ScriptRef: ref, Inputs: make([]json.RawMessage, 51)}))
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusRequestEntityTooLarge || e.Problem == nil || e.Problem.Limit != "maxBatchItems" || e.Retryable() {
		t.Errorf("51 inputs: %v", err)
	}

	n := 0
	for l, err := range c.Batch(ctx, client.BatchRequest{ScriptRef: ref, Inputs: inputs}) {
		if err != nil || l.Index != n {
			t.Fatalf("line %d: %+v, %v", n, l, err)
		}
		if n++; n == 2 {
			break
		}
	}
}

// The client refuses what it can tell no service takes, and reads an
// answer strictly: a cut answer is a retryable error, an out-of-order or
// malformed one is not.
func TestBatchReadsStrictly(t *testing.T) {
	line := func(i int) string {
		return fmt.Sprintf(`{"index":%d,"ok":true,"value":%d,"usage":{"phasesMs":{"fetch":0,"verify":0,"setup":0,"run":0,"serialise":0},"cpuMs":0,"cpuBudgetUsed":0,"cpuBudget":0,"peakMemoryBytes":0,"memoryLimitBytes":0}}`+"\n", i, i)
	}
	summary := func(n int) string {
		return fmt.Sprintf(`{"summary":{"items":%d,"outcomes":{"ok":%d},"problems":0,"notRun":0,"usage":{"phasesMs":{"fetch":0,"verify":0,"setup":0,"run":0,"serialise":0},"cpuMs":0,"cpuBudgetUsed":0,"cpuBudget":0,"peakMemoryBytes":0,"memoryLimitBytes":0}}}`+"\n", n, n)
	}
	cases := []struct {
		name, body, ct string
		lines          int
		retryable      bool
		reason         string
	}{
		{"whole", line(0) + line(1) + summary(2), "", 3, false, ""},
		{"a later member is ignored", line(0) + strings.Replace(line(1), `"ok":true`, `"ok":true,"later":1`, 1) + summary(2), "", 3, false, ""},
		{"cut before the summary", line(0) + line(1), "", 2, true, "cut after 2 of 2"},
		{"cut inside a line", line(0) + line(1)[:20], "", 1, true, "reading the answer after 1 lines"},
		{"out of order", line(1) + line(0) + summary(2), "", 0, false, "line 1 is not input 0's"},
		{"summary too early", line(0) + summary(1), "", 1, false, "line 2 is not input 1's"},
		{"a summary of other inputs", line(0) + line(1) + summary(3), "", 2, false, "not the summary of 2 inputs"},
		{"malformed", line(0) + "{\"index\":1,\"ok\":\"yes\"}\n", "", 1, false, "malformed line 2"},
		{"not NDJSON", line(0), "application/json", 0, false, "want application/x-ndjson"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/x-ndjson")
				if tc.ct != "" {
					w.Header().Set("Content-Type", tc.ct)
				}
				_, _ = io.WriteString(w, tc.body)
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			lines, err := collect(dial(t, f.URL).Batch(ctx, client.BatchRequest{ScriptRef: ref, Inputs: []json.RawMessage{[]byte("1"), []byte("2")}}))
			if len(lines) != tc.lines {
				t.Errorf("%d lines, want %d (%v)", len(lines), tc.lines, err)
			}
			var e *client.Error
			switch {
			case tc.reason == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.reason != "" && (!errors.As(err, &e) || !strings.Contains(e.Reason, tc.reason) || e.Retryable() != tc.retryable):
				t.Errorf("error %v, want one saying %q, retryable %v", err, tc.reason, tc.retryable)
			}
			if reqs := f.requests(); len(reqs) != 1 || reqs[0].Path != "/v1/evaluations:batch" || !strings.HasPrefix(reqs[0].Header.Get("Accept"), "application/x-ndjson") ||
				string(reqs[0].Body) != `{"scriptRef":"`+ref+`","inputs":[1,2]}` {
				t.Errorf("requests %+v", reqs)
			}
		})
	}

	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { t.Error("an invalid batch was sent") })
	c := dial(t, f.URL)
	for name, req := range map[string]client.BatchRequest{
		"no script":     {Inputs: []json.RawMessage{[]byte("1")}},
		"not JSON text": {ScriptRef: ref, Inputs: []json.RawMessage{[]byte("1"), []byte("{")}},
	} {
		if _, err := collect(c.Batch(context.Background(), req)); !errors.Is(err, client.ErrInvalidRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
