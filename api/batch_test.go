package api

import (
	"bytes"
	"errors"
	"net/http"
	"testing"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// A batch's body is refused as /v1/evaluations' is, or, with more inputs
// than maxBatchItems, with the 413 naming it; an accepted one is an
// evaluation by reference and inputs that are each JSON text.
func FuzzDecodeBatch(f *testing.F) {
	for _, s := range []string{
		`{"scriptRef":"` + seedRef + `","inputs":[]}`,
		`{"scriptRef":"` + seedRef + `","inputs":[1,"two",{"three":[3]},null],"limits":{"wallClockMs":100},"captureLogs":true}`,
		`{"scriptRef":"` + seedRef + `","inputs":[1,2,3,4,5]}`,
		`{"scriptRef":"` + seedRef + `","inputs":{"a":1}}`,
		`{"scriptRef":"` + seedRef + `","inputs":[{"a":1,"a":2}]}`,
		`{"scriptRef":"` + seedRef + `","input":1,"inputs":[1]}`,
		`{"scriptRef":"` + seedRef + `"}`,
		`{"inputs":[[[[]]]],"scriptRef":"` + seedRef + `","determinism":{"seed":"s"}}`,
	} {
		f.Add([]byte(s))
	}
	lim := fuzzLimits
	lim.MaxBatchItems = 4
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, inputs, err := DecodeBatchRequest(body, lim)
		if err != nil {
			var p *Problem
			if errors.As(err, &p) && p.ProblemType() == ProblemTooManyInputs {
				if p.Status != http.StatusRequestEntityTooLarge || p.Limit != "maxBatchItems" || p.LimitValue != 4 || p.Offset == nil {
					t.Fatalf("too many inputs refused without its limit or where: %+v", p)
				}
				return
			}
			checkRefusal(t, err)
			return
		}
		if ev.ScriptRef.IsZero() || ev.Answer != spi.AnswerChannel || len(inputs) > 4 {
			t.Fatalf("accepted %+v with %d inputs", ev, len(inputs))
		}
		for i, in := range inputs {
			if !bytes.Equal(in, bytes.TrimSpace(in)) || len(in) == 0 {
				t.Fatalf("input %d is not one value's text: %q", i, in)
			}
		}
		checkLimits(t, ev.Limits)
		checkReplay(t, ev.Replay)
	})
}

// Any line a service may send is read without a panic; a line accepted is
// written again as a line that reads the same.
func FuzzDecodeBatchLine(f *testing.F) {
	for _, s := range []string{
		`{"index":0,"ok":true,"value":1,"usage":{"phasesMs":{"fetch":0,"verify":0,"setup":0,"run":0,"serialise":0},"cpuMs":0,"cpuBudgetUsed":0,"cpuBudget":0,"peakMemoryBytes":0,"memoryLimitBytes":0}}`,
		`{"index":2,"ok":false,"failure":{"channel":"limitExceeded","kind":"cpu"}}`,
		`{"index":3,"problem":{"type":"x","title":"t","status":503,"detail":"d","retryable":true}}`,
		`{"index":4,"notRun":true,"detail":"stopped"}`,
		`{"summary":{"items":1,"outcomes":{"ok":1},"problems":0,"notRun":0,"usage":{"phasesMs":{"fetch":0,"verify":0,"setup":0,"run":0,"serialise":0},"cpuMs":0,"cpuBudgetUsed":0,"cpuBudget":0,"peakMemoryBytes":0,"memoryLimitBytes":0}}}`,
		`{"index":1,"notRun":false}`,
		`{"index":1,"notRun":true,"detail":""}`,
		`{"summary":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		l, err := DecodeBatchLine(line)
		if err != nil {
			return
		}
		out, err := AppendBatchLine(nil, l)
		if err != nil {
			t.Fatalf("accepted %q but cannot write it again: %v", line, err)
		}
		again, err := DecodeBatchLine(bytes.TrimSuffix(out, []byte("\n")))
		if err != nil {
			t.Fatalf("%q written again as %q, which does not read: %v", line, out, err)
		}
		if out2, _ := AppendBatchLine(nil, again); !bytes.Equal(out, out2) {
			t.Fatalf("%q read again differs: %q, then %q", line, out, out2)
		}
	})
}
