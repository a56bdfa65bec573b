package worker

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// A result frame carries every outcome variant exactly, with its engine
// fault and its worker's counts of kept compiled scripts, and a run frame the script's and input's bytes as they are (a lone
// surrogate's WTF-8 bytes, a NUL) with its limits.
func TestFramesRoundTrip(t *testing.T) {
	name := "TypeError"
	empty := ""
	for _, o := range []spi.Outcome{
		spi.OK([]byte(`{"a":[1,"\ud800"]}`)),
		spi.LimitHit(spi.LimitMemory),
		spi.Threw(&name, "bad"),
		spi.Threw(&empty, ""),
		spi.Threw(nil, "7"),
		spi.InputTooLarge(),
		spi.Infrastructure("engine failed"),
	} {
		usage := spi.Usage{Setup: 1, Compile: 6, Run: 2, Serialise: 3, CPU: 4, CPUBudgetUsed: 12, CPUBudget: 1e6, PeakMemoryBytes: 5 << 20, MemoryLimitBytes: 1 << 31}
		compiled := quickjs.CompiledScriptStats{Hits: 1 << 40, Misses: 3, Evictions: 2}
		in := resultFrame{id: 9, status: resultOutcome, outcome: o, logs: "hi\n", usage: usage, retire: true, compiled: compiled}
		if o.Kind == spi.KindInfrastructure {
			in.fault = "wasm error: out of bounds memory access"
		}
		var out resultFrame
		if err := out.parse(in.append(nil)); err != nil {
			t.Fatal(err)
		}
		if describe(out.outcome) != describe(o) || out.id != 9 || out.logs != "hi\n" || out.usage != usage || !out.retire || out.fault != in.fault || out.compiled != compiled ||
			(o.Name == nil) != (out.outcome.Name == nil) || (o.Value == nil) != (out.outcome.Value == nil) {
			t.Errorf("%s came back as %s (%+v)", describe(o), describe(out.outcome), out)
		}
	}
	script := "'\xed\xa0\x80'.length\x00"
	req := spi.Request{Script: script, InputJSON: `"\ud800"`, Limits: spi.Limits{WallClock: 1500 * time.Millisecond, MemoryBytes: 16 << 20}}
	var f runFrame
	if err := f.parse(appendRun(nil, 3, spi.RunRequest{Request: req, CaptureLogs: true}, false), nil); err != nil {
		t.Fatal(err)
	}
	if f.id != 3 || f.script != script || f.input != req.InputJSON || f.limits != req.Limits || !f.logs || f.replay != nil {
		t.Fatalf("run frame came back as %+v", f)
	}
	// a run of the last frame's script names it rather than carry it: it
	// comes back as that very script, and a frame that names a last
	// script where there was none is refused
	last := "a script of the last run"
	other := spi.RunRequest{Request: spi.Request{Script: "ignored", InputJSON: "7", Limits: req.Limits}}
	b := appendRun(nil, 5, other, true)
	if bytes.Contains(b, []byte("ignored")) {
		t.Fatal("a run frame of the last run's script carries the script")
	}
	if err := f.parse(b, &last); err != nil || f.script != last || f.input != "7" || f.id != 5 {
		t.Fatalf("a run frame of the last run's script came back as %+v, %v", f, err)
	}
	if err := f.parse(b, nil); err == nil || !strings.Contains(err.Error(), "there was none") {
		t.Fatalf("a run frame naming a last script where there was none: %v", err)
	}
	for _, r := range []spi.Replay{{}, {Seed: "step-7"}, {Seed: "x", Now: time.Date(2262, 4, 11, 0, 0, 0, 5, time.UTC)}, {Now: time.Unix(0, 0).UTC()}} {
		if err := f.parse(appendRun(nil, 4, spi.RunRequest{Request: req, Replay: &r}, false), nil); err != nil {
			t.Fatal(err)
		}
		if f.id != 4 || f.logs || f.replay == nil || f.replay.Seed != r.Seed || !f.replay.Now.Equal(r.Now) {
			t.Fatalf("a replayable run frame came back as %+v (%+v), want %+v", f, f.replay, r)
		}
	}
}

// A frame cut short, or with bytes after its end, is refused, never
// misread; a frame over its bound is refused before its payload is read.
func TestFramesRefuseDamage(t *testing.T) {
	full := (&resultFrame{id: 1, outcome: spi.OK([]byte(`1`))}).append(nil)
	for n := range len(full) {
		var r resultFrame
		if err := r.parse(full[:n]); err == nil {
			t.Errorf("a result frame cut to %d of %d bytes parsed", n, len(full))
		}
	}
	var r resultFrame
	if err := r.parse(append(full, 0)); err == nil {
		t.Error("a result frame with a byte after its end parsed")
	}
	var buf bytes.Buffer
	if err := writeFrame(&buf, frameResult, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readFrame(&buf, nil, func(frameType) int { return 99 }); err == nil {
		t.Error("a 100-byte frame read under a bound of 99")
	}
}

// No input makes the decoders panic or read past their input.
func FuzzFrames(f *testing.F) {
	f.Add((&resultFrame{id: 1, outcome: spi.OK([]byte(`[1]`)), logs: "x"}).append(nil))
	f.Add(appendRun(nil, 2, spi.RunRequest{Request: spi.Request{Script: "1", InputJSON: "null", Limits: spi.Limits{WallClock: time.Second, MemoryBytes: 1 << 20}}}, false))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r resultFrame
		if r.parse(b) == nil {
			var again resultFrame
			if err := again.parse(r.append(nil)); err != nil || describe(again.outcome) != describe(r.outcome) || again.fault != r.fault {
				t.Fatalf("re-encoding a parsed result frame: %v", err)
			}
		}
		var run runFrame
		_ = run.parse(b, nil)
	})
}

// A cancel frame names the run to stop, and nothing else; hello and ready
// cross as their types, and a channel that opens with the wrong control
// frame is refused.
func TestControlFrames(t *testing.T) {
	id, err := parseCancel(appendCancel(nil, 1<<40))
	if err != nil || id != 1<<40 {
		t.Fatalf("cancel frame came back as %d, %v", id, err)
	}
	if _, err := parseCancel(appendCancel(nil, 7)[:0]); err == nil {
		t.Error("an empty cancel frame parsed")
	}
	if _, err := parseCancel(append(appendCancel(nil, 7), 0)); err == nil {
		t.Error("a cancel frame with a byte after its end parsed")
	}

	var buf bytes.Buffer
	h := hello{Engine: EngineOptions{MaxMemoryBytes: 1 << 20, PoolSize: 2, HardKillGrace: time.Second}, Lockdown: LockdownRequired, LogLevel: "warn"}
	if err := sendControl(&buf, frameHello, h); err != nil {
		t.Fatal(err)
	}
	var got hello
	if err := receiveControl(&buf, frameHello, &got); err != nil || got != h {
		t.Fatalf("hello came back as %+v, %v", got, err)
	}
	if err := sendControl(&buf, frameReady, ready{Pid: 42, Protections: Protections{Process: true, Seccomp: true}}); err != nil {
		t.Fatal(err)
	}
	if err := receiveControl(&buf, frameHello, &got); err == nil {
		t.Error("a ready frame was read as a hello")
	}
}
