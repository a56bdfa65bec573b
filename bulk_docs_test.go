package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/batch.md's job on one machine is what the commands it shows print:
// two tasks of bulk over the committed example inputs and script, their
// lines on standard output, the job's lines as bulk-check prints them and
// the manifests' counts.
func TestDocsBulkLocalRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	const (
		ref     = "sha256:83ae4f3c7dbb7c474394b02836ce78988c5dbcef1a25738ddf2b77355bbc90a5"
		inputs  = "examples/inputs/orders.ndjson"
		shown   = "/tmp/orders-run" // the results directory the page names
		command = "LOG_LEVEL=warn go run . bulk -script " + ref + " -inputs " + inputs + " -results " + shown
	)
	doc, err := os.ReadFile("docs/batch.md")
	if err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(t.TempDir(), "orders-run")
	// as a reader's shell has it: the settings the page sets, the others
	// at their defaults (STORE_URL's is examples/store)
	for _, k := range []string{"STORE_URL", "CLOUD_RUN_TASK_ATTEMPT", "BULK_SCRIPT", "BULK_INPUTS", "BULK_RESULTS"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("LOG_LEVEL", "warn")
	t.Setenv("WORKER_SPARES", "0")
	t.Setenv("COMPILATION_CACHE_DIR", filepath.Join(os.TempDir(), "sandbox-cloudrun-bulk-test-cache"))
	var want strings.Builder
	want.WriteString("```console\n")
	for _, k := range []string{"0", "1"} {
		t.Setenv("CLOUD_RUN_TASK_INDEX", k)
		t.Setenv("CLOUD_RUN_TASK_COUNT", "2")
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{"bulk", "-script", ref, "-inputs", inputs, "-results", results}, nil, &stdout, &stderr); err != nil {
			t.Fatalf("task %s: %v\n%s", k, err, stderr.String())
		}
		want.WriteString("$ CLOUD_RUN_TASK_INDEX=" + k + " CLOUD_RUN_TASK_COUNT=2 " + command + "\n")
		want.WriteString(strings.ReplaceAll(stdout.String(), results, shown))
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"bulk-check", "-results", results}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("bulk-check: %v\n%s", err, stderr.String())
	}
	want.WriteString("$ go run . bulk-check -results " + shown + " > /tmp/orders.ndjson\n")
	want.WriteString(strings.ReplaceAll(stderr.String(), results, shown))
	want.WriteString("$ jq -c 'del(.usage)' /tmp/orders.ndjson\n")
	for _, l := range linesWithoutUsage(t, stdout.Bytes()) {
		want.WriteString(l + "\n")
	}
	want.WriteString("$ jq -c '{shard, start, end, items, outcomes, problems, notRun}' " + shown + "/shard-*-of-00002.json\n")
	for _, k := range []string{"0", "1"} {
		b, err := os.ReadFile(filepath.Join(results, "shard-0000"+k+"-of-00002.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m struct { // jq's object, its members in the order it names them
			Shard    int            `json:"shard"`
			Start    int            `json:"start"`
			End      int            `json:"end"`
			Items    int            `json:"items"`
			Outcomes map[string]int `json:"outcomes"`
			Problems int            `json:"problems"`
			NotRun   int            `json:"notRun"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		want.Write(append(line, '\n'))
	}
	want.WriteString("```\n")
	if !bytes.Contains(doc, []byte(want.String())) {
		t.Errorf("docs/batch.md does not show the job on one machine as it runs; the commands print\n%s", want.String())
	}
}
