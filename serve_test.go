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
// one start-up line that reports every problem, and first warns about each
// variable that looks like a misspelt setting, by name and never by value,
// with the setting it resembles and what its value is.
func TestServeRefusesMisconfiguration(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent")
	t.Setenv("STORE_URL", missing)
	t.Setenv("MAX_WALL_CLOCK", "abc")
	t.Setenv("MAX_CONCURENT_EVALUATIONS", "value-that-may-be-a-secret")
	t.Setenv("MAX_WALL_CLOCK_MS", "1000")
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
	if len(lines) != 3 {
		t.Fatalf("want two warnings and the start-up failure, got:\n%s", out.String())
	}
	warned := map[string]bool{}
	for _, w := range lines[:2] {
		suffix := map[string]string{
			"MAX_CONCURENT_EVALUATIONS": "did you mean MAX_CONCURRENT_EVALUATIONS, a whole number, such as 1?",
			"MAX_WALL_CLOCK_MS":         "did you mean MAX_WALL_CLOCK, a duration with a unit (ms, s, m, h), such as 30s?",
		}[w["variable"].(string)]
		if w["severity"] != "WARNING" || suffix == "" || !strings.HasSuffix(w["message"].(string), suffix) ||
			!strings.HasPrefix(suffix, "did you mean "+w["didYouMean"].(string)+",") {
			t.Errorf("the warning: %v", w)
		}
		warned[w["variable"].(string)] = true
	}
	if len(warned) != 2 {
		t.Errorf("want one warning for each variable: %v", lines[:2])
	}
	f := lines[2]
	msg, _ := f["err"].(string)
	if f["severity"] != "ERROR" || f["message"] != "start-up failed" ||
		!strings.Contains(msg, "the store directory "+missing+" does not exist") ||
		!strings.Contains(msg, `MAX_WALL_CLOCK must be a duration with a unit`) {
		t.Errorf("the failure: %v", f)
	}
}

// The eval and put verbs print on standard error, before anything else,
// what serve logs as warnings: each variable that looks like a misspelt
// setting, by name and never by value.
func TestVerbsWarnOfMisspeltSettings(t *testing.T) {
	t.Setenv("STORE_URL", t.TempDir())
	t.Setenv("MAX_WALL_CLOCK_MS", "value-that-may-be-a-secret")
	want := "warning: the environment variable MAX_WALL_CLOCK_MS is not a setting of this service and is ignored: " +
		"did you mean MAX_WALL_CLOCK, a duration with a unit (ms, s, m, h), such as 30s?\n"
	missing := filepath.Join(t.TempDir(), "missing.js")
	for _, verb := range []string{"eval", "put"} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{verb, missing}, nil, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "missing.js") {
			t.Errorf("%s of a file that is not there: %v", verb, err)
		}
		if stderr.String() != verb+": "+want || strings.Contains(stdout.String()+stderr.String(), "secret") {
			t.Errorf("%s printed\n%q on stdout\n%q on stderr\nwant on stderr\n%q", verb, stdout.String(), stderr.String(), verb+": "+want)
		}
	}
}
