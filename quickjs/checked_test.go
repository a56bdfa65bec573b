//go:build checkedengine

package quickjs

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The checked engine sees what wasm lets pass: one byte written just
// outside a heap block, before it or after it, ends the run with a
// *HeapFault that names the zone, whether the block is freed at once or
// left for the check at the end of the next run. A write inside the block
// is no fault. (sb_checked_selftest exists only in the checked build.)
func TestCheckedHeapSeesOneByteOutside(t *testing.T) {
	e := testEngine(t, 64<<20)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		off    int32
		freeIt bool
		want   string // "" for no fault
	}{
		{"the last byte of the block", 23, true, ""},
		{"the first byte of the block", 0, true, ""},
		{"one byte past, freed", 24, true, "the red zone after"},
		{"one byte past, left to the end of the run", 24, false, "the red zone after"},
		{"the last byte of the zone after", 24 + 31, true, "the red zone after"},
		{"the byte before QuickJS's own header", -9, true, "the red zone before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := e.testInstance(t)
			free := int32(0)
			if tc.freeIt {
				free = 1
			}
			_, err := in.mod.ExportedFunction("sb_checked_selftest").Call(ctx, uint64(uint32(tc.off)), uint64(free))
			if err == nil {
				// left in place, or inside: the next run's end checks it
				var raw rawResult
				raw, err = in.exec(ctx, "1 + 1", "null", 16<<20, 0, false, 1)
				if err == nil && raw.status != statusOK {
					t.Fatalf("the run after the write: status %d (%.100s)", raw.status, raw.result)
				}
			}
			var hf *HeapFault
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("a write inside the block: %v", err)
			case tc.want == "":
			case !errors.As(err, &hf):
				t.Fatalf("got %v, want a *HeapFault naming %q", err, tc.want)
			case !strings.Contains(hf.Text, tc.want):
				t.Fatalf("got %q, want it to name %q", hf.Text, tc.want)
			}
		})
	}
}

// A heap fault is an engine failure that says what the checked heap found,
// never the script's own outcome and never the memory limit (even after a
// refused allocation, which otherwise explains a trap), and the next
// instance is served.
func TestCheckedHeapFaultIsAnEngineFailure(t *testing.T) {
	e := testEngine(t, 64<<20)
	ctx := context.Background()
	in := e.testInstance(t)
	// refuse an allocation first: oom is set for the run that follows
	if raw, err := in.exec(ctx, `try { "x".repeat(1 << 29) } catch (e) {} 1`, "null", 1<<20, 0, false, 1); err != nil || raw.status != statusOK {
		t.Fatalf("a caught refusal: status %d, err %v", raw.status, err)
	}
	if _, err := in.mod.ExportedFunction("sb_checked_selftest").Call(ctx, 24, 0); err != nil {
		t.Fatal(err)
	}
	_, err := in.exec(ctx, "1", "null", 1<<20, 0, false, 1)
	var hf *HeapFault
	if !errors.As(err, &hf) {
		t.Fatalf("got %v, want a *HeapFault", err)
	}
	next := e.testInstance(t)
	if raw, err := next.exec(ctx, "input + 1", "41", 1<<20, 0, false, 1); err != nil || string(raw.result) != "42" {
		t.Fatalf("the next instance: status %d (%.100s), err %v", raw.status, raw.result, err)
	}
}
