//go:build checkedengine

package quickjs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// ArrayBuffer.prototype.transfer, with each of its allocations refused in
// turn, either moves the bytes or leaves the old buffer as it was: a
// refusal never leaves it detached with its bytes lost
// (0018-array-buffer-transfer-keeps-its-buffer; the engine before it lost
// them when the new buffer's object could not be made). For a shorter,
// a longer, the same and a zero length, from a fixed-length and a
// resizable buffer.
func TestTransferKeepsItsBufferWhenRefused(t *testing.T) {
	e := newEngine(t, quickjs.WithPoolSize(0), quickjs.WithMaxMemoryBytes(16<<20))
	ctx := context.Background()
	for _, tc := range []struct{ source, call string }{
		{"new ArrayBuffer(64)", "ab.transfer(32)"},
		{"new ArrayBuffer(64)", "ab.transfer(128)"},
		{"new ArrayBuffer(64)", "ab.transfer()"},
		{"new ArrayBuffer(64)", "ab.transfer(0)"},
		{"new ArrayBuffer(64, { maxByteLength: 256 })", "ab.transfer(96)"},
		{"new ArrayBuffer(64, { maxByteLength: 256 })", "ab.transferToFixedLength(16)"},
	} {
		t.Run(tc.call+" of "+tc.source, func(t *testing.T) {
			// what the script reports: whether the call threw, the old
			// buffer's state, and the moved bytes' length and first byte
			script := fmt.Sprintf(`const ab = %s;
new Uint8Array(ab).fill(7);
let moved = null, threw = false;
try { moved = %s } catch (e) { threw = true }
[threw, ab.detached, ab.byteLength, ab.detached ? null : new Uint8Array(ab)[0],
 moved && moved.byteLength, moved && moved.byteLength ? new Uint8Array(moved)[0] : null]`, tc.source, tc.call)
			req := spi.Request{Script: script, InputJSON: "null", Limits: spi.Limits{WallClock: 30 * time.Second, MemoryBytes: 16 << 20}}
			base, err := e.RunRefusingForTests(ctx, req, 0, false, 0)
			if err != nil || base.Trap != nil || !base.Outcome.OK {
				t.Fatalf("the run that refuses nothing: %s, trap %v, err %v", describe(base.Outcome), base.Trap, err)
			}
			intact := `[true,false,64,7,null,null]`
			refusedInside := 0
			for n := uint32(1); n <= base.Allocations; n++ {
				r, err := e.RunRefusingForTests(ctx, req, n, false, 0)
				if err != nil {
					t.Fatal(err)
				}
				if r.Trap != nil {
					t.Fatalf("allocation %d refused: a trap: %v", n, r.Trap)
				}
				o := r.Outcome
				switch {
				case o.Kind == spi.KindLimit && o.Limit == spi.LimitMemory, o.Kind == spi.KindInputTooLarge:
					// refused outside the call's try, or while the input was read
				case o.OK && string(o.Value) == string(base.Outcome.Value):
				case o.OK && string(o.Value) == intact:
					refusedInside++
				default:
					t.Errorf("allocation %d of %d refused: %s; the call must move the bytes (%s) or leave the buffer whole (%s)",
						n, base.Allocations, describe(o), base.Outcome.Value, intact)
				}
			}
			if refusedInside == 0 {
				t.Fatalf("no refusal of the %d allocations reached the call: the test shows nothing", base.Allocations)
			}
			t.Logf("%d allocations; %d refusals inside the call left the buffer whole", base.Allocations, refusedInside)
		})
	}
}
