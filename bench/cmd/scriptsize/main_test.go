package main

import (
	"strings"
	"testing"
)

// The table has a row per script and a column per phase measured, and the
// goals' ratios are of the right phases.
func TestTable(t *testing.T) {
	res := &Result{Reps: 1, Batch: 100, LoadAvg: []string{"1", "2"}, Version: "v"}
	add := func(system, script, runs, sent string, ms float64) {
		res.Rows = append(res.Rows, &Row{System: system, Script: script, ScriptBytes: len(script), Runs: runs, Sent: sent, MsPerEval: ms, RepMsPerEval: []float64{ms}})
	}
	for i, s := range scripts {
		add("this", s, "first", "single", float64(10*(i+1)))
		add("this", s, "later", "single", float64(i+1))
		add("this", s, "later", "batch", float64(i+1)/2)
		add("quickjs-emscripten", s, "every", "in process", float64(20*(i+1)))
	}
	var b strings.Builder
	table(&b, res)
	out := b.String()
	for _, want := range []string{
		"| script | bytes | this: first run, single | this: later runs, single | this: later runs, batched | quickjs-emscripten, in process |",
		"| 100KB | 5 | 40 | 4 | 2 | 80 |",
		"100 KB script's later runs against the 100 B script's, single: 4.00× (batched: 4.00×)",
		"20 KB transformer over HTTP against quickjs-emscripten in process: later runs 0.05×, first run 0.50×",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}
