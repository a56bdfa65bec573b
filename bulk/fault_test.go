package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// An input whose run breaks the engine from inside raises the operator's
// alarm in a job's task as on the service: the engine fault line, at
// ERROR, with the script's hash and the trap; its line is the retryable
// problem, and the shard goes on.
func TestBulkEngineFaultIsTheAlarm(t *testing.T) {
	const marker = "/* engine fault */"
	engine, err := quickjs.New(context.Background(), quickjs.WithPoolSize(1), quickjs.WithLogger(slog.New(slog.DiscardHandler)),
		quickjs.WithTrapForTests(func(script string) bool { return strings.HasPrefix(script, marker) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close(context.Background()) })
	// compiled before the job: the runs' limits bound the runs, not the compile
	if err := engine.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	mem, err := contentstore.NewMemStore(contentstore.Options{MaxScriptBytes: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := mem.Put(context.Background(), []byte(marker+" input"))
	if err != nil {
		t.Fatal(err)
	}
	eff, err := effect.New(mem, engine, effect.Options{MaxInputBytes: 1 << 20, MaxOutputBytes: 1 << 20, MaxScriptBytes: 1 << 20,
		MinMemoryBytes: quickjs.MinMemoryBytes, MaxMemoryBytes: 64 << 20, MaxWallClock: 5 * time.Second, BackendGrace: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.ndjson"), []byte("1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	m, err := Run(context.Background(), Job{
		Effect: eff, Limits: api.Limits{MaxScriptBytes: 1 << 20},
		Evaluation: spi.Evaluation{ScriptRef: ref, Answer: spi.AnswerChannel, Limits: spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 32 << 20}},
		Parallel:   1, Inputs: filepath.Join(dir, "in.ndjson"), Results: filepath.Join(dir, "out"),
		Task: Task{Count: 1}, MaxLineBytes: 1 << 20, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Items != 2 || m.Problems != 2 {
		results, _ := os.ReadFile(filepath.Join(dir, "out", "shard-00000-of-00001.ndjson"))
		t.Errorf("manifest %+v, want 2 problems; the results:\n%s", m, results)
	}
	var faults int
	for line := range bytes.Lines(logs.Bytes()) {
		var l map[string]any
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatal(err)
		}
		if l["msg"] == answer.EngineFaultMessage {
			faults++
			if l["level"] != "ERROR" || l["route"] != "bulk" || l["scriptSha256"] != ref.String() || l["trap"] != "wasm error: unreachable" {
				t.Errorf("engine fault line %v", l)
			}
		}
	}
	if faults != 2 {
		results, _ := os.ReadFile(filepath.Join(dir, "out", "shard-00000-of-00001.ndjson"))
		t.Errorf("%d engine fault lines, want 2:\n%s\nthe results:\n%s", faults, logs.String(), results)
	}
}
