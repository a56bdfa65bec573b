package bulk

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// lockedBuffer is a log several goroutines write.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// While its shard runs, a task logs "bulk progress" lines at its
// interval: its index, how many of the shard's inputs are done, the rate
// and the time left at it, each line's figures agreeing with each other
// and with the line before; and none once the shard is written.
func TestBulkLogsProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	engine, err := quickjs.New(context.Background(), quickjs.WithPoolSize(2), quickjs.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close(context.Background()) })
	mem, err := contentstore.NewMemStore(contentstore.Options{MaxScriptBytes: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	// each input takes at least 100 ms of the wall clock: the shard's 12,
	// two at once, at least 600 ms, many times the interval
	ref, err := mem.Put(context.Background(), []byte(`const t = Date.now(); while (Date.now() - t < 100) {} input * 2`))
	if err != nil {
		t.Fatal(err)
	}
	eff, err := effect.New(mem, engine, effect.Options{MaxInputBytes: 1 << 20, MaxOutputBytes: 1 << 20, MaxScriptBytes: 1 << 20,
		MinMemoryBytes: quickjs.MinMemoryBytes, MaxMemoryBytes: 64 << 20, MaxWallClock: 30 * time.Second, BackendGrace: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var in strings.Builder
	for i := range 24 {
		fmt.Fprintln(&in, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.ndjson"), []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	m, err := Run(context.Background(), Job{
		Effect: eff, Limits: api.Limits{MaxScriptBytes: 1 << 20},
		Evaluation: spi.Evaluation{ScriptRef: ref, Answer: spi.AnswerChannel, Limits: spi.Limits{WallClock: 30 * time.Second, MemoryBytes: 32 << 20}},
		Parallel:   2, Inputs: filepath.Join(dir, "in.ndjson"), Results: filepath.Join(dir, "out"),
		Task: Task{Index: 1, Count: 2}, MaxLineBytes: 1 << 20, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		ProgressEvery: 20 * time.Millisecond, Warm: engine.Warm,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Complete() || m.Items != 12 {
		t.Fatalf("manifest %+v", m)
	}
	var lines int
	var last int64
	written := false
	for line := range strings.Lines(logs.String()) {
		var l struct {
			Msg                string
			Level              string
			Task               *int
			Done, Total        int64
			Percent, PerSecond float64
			SecondsLeft        *int64
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		switch l.Msg {
		case "bulk shard written":
			written = true
			continue
		case "bulk progress":
		default:
			continue
		}
		lines++
		if written {
			t.Errorf("a progress line after the shard was written: %s", line)
		}
		if l.Level != "INFO" || l.Task == nil || *l.Task != 1 || l.Total != 12 || l.Done < last || l.Done > 12 {
			t.Errorf("line %s, after one with %d done; want task 1, of 12", line, last)
		}
		last = l.Done
		if d := l.Percent - 100*float64(l.Done)/12; d < -0.05 || d > 0.05 { // one place
			t.Errorf("line %s: percent is not done of total", line)
		}
		switch {
		case l.Done == 0 && (l.SecondsLeft != nil || l.PerSecond != 0):
			t.Errorf("line %s: a rate or a time left before any input is done", line)
		case l.Done > 0 && (l.SecondsLeft == nil || l.PerSecond <= 0):
			t.Errorf("line %s: no rate or no time left once inputs are done", line)
		case l.Done > 0:
			// the inputs not done at the rate, rounded up; the rate has 2 places
			want := float64(l.Total-l.Done) / l.PerSecond
			if d := float64(*l.SecondsLeft) - want; d < -1 || d > 1+want*0.01 {
				t.Errorf("line %s: secondsLeft %d, but %d inputs at %v/s take %.1fs", line, *l.SecondsLeft, l.Total-l.Done, l.PerSecond, want)
			}
		}
	}
	if lines == 0 || !written {
		t.Errorf("%d progress lines, shard written %v:\n%s", lines, written, logs.String())
	}
}
