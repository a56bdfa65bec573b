package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// serve refuses to start on a store directory that does not exist, in the
// one start-up line that reports every problem, and first warns about a
// variable that looks like a misspelt setting, by name and never by value.
func TestServeRefusesMisconfiguration(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent")
	t.Setenv("STORE_URL", missing)
	t.Setenv("MAX_WALL_CLOCK", "abc")
	t.Setenv("MAX_CONCURENT_EVALUATIONS", "value-that-may-be-a-secret")
	var out, errOut bytes.Buffer
	err := serve(context.Background(), &out, &errOut)
	if exitCode(err) != 1 {
		t.Fatalf("serve: %v (exit %d)\n%s", err, exitCode(err), out.String())
	}
	if strings.Contains(out.String(), "value-that-may-be-a-secret") {
		t.Errorf("an unknown variable's value is logged:\n%s", out.String())
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %s", l)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("want a warning and the start-up failure, got:\n%s", out.String())
	}
	if w := lines[0]; w["severity"] != "WARNING" || w["variable"] != "MAX_CONCURENT_EVALUATIONS" || w["didYouMean"] != "MAX_CONCURRENT_EVALUATIONS" ||
		!strings.HasSuffix(w["message"].(string), "did you mean MAX_CONCURRENT_EVALUATIONS?") {
		t.Errorf("the warning: %v", w)
	}
	f := lines[1]
	msg, _ := f["err"].(string)
	if f["severity"] != "ERROR" || f["message"] != "start-up failed" ||
		!strings.Contains(msg, "the store directory "+missing+" does not exist") ||
		!strings.Contains(msg, `MAX_WALL_CLOCK must be a duration with a unit`) {
		t.Errorf("the failure: %v", f)
	}
}
