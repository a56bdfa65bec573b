//go:build checkedengine

package quickjs

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// lifetimeError makes a lifetime error on purpose in the instance's heap,
// through QuickJS's own allocator (sb_checked_lifetime_selftest, in the
// checked build only): "write" writes a byte at off of a 24-byte block
// after its free, "double free" frees a block twice. Between the free and
// the use, 64 blocks of its size come and go, as they would in a running
// engine.
func lifetimeError(t *testing.T, in *instance, what string, off int32) error {
	t.Helper()
	code := map[string]uint64{"write": 1, "double free": 2}[what]
	if code == 0 {
		t.Fatalf("no lifetime error %q", what)
	}
	res, err := in.mod.ExportedFunction("sb_checked_lifetime_selftest").Call(context.Background(), code, uint64(uint32(off)))
	if err == nil && int32(res[0]) != 0 {
		t.Fatalf("sb_checked_lifetime_selftest(%s) returned %d: the heap had no block to give", what, int32(res[0]))
	}
	return err
}

// setLifetimes turns the checked heap's lifetime checks on or off.
func setLifetimes(t *testing.T, in *instance, on bool) {
	t.Helper()
	v := uint64(0)
	if on {
		v = 1
	}
	if _, err := in.mod.ExportedFunction("sb_checked_lifetimes").Call(context.Background(), v); err != nil {
		t.Fatal(err)
	}
}

// A write into a freed block, and a second free of a block, end the run as
// a *HeapFault that names the block: the write when the block leaves the
// quarantine or when the run ends, whichever is first, the double free at
// once. The offset is the block's as the heap sees it, QuickJS's own 8-byte
// header first. With the lifetime checks off (freed blocks go straight back
// to libc, as a heap with red zones alone does) a write into what was the
// block's data and a double free go unseen: the run after them answers as
// if nothing had happened, which shows that the quarantine and its
// verification are what sees them. (Off, a write into QuickJS's header of
// the block that took the freed one's place breaks QuickJS's own free of
// it, and one past it lands in its red zone: seen, but not as what they
// are.)
func TestCheckedHeapSeesUseAfterFree(t *testing.T) {
	e := testEngine(t, 64<<20)
	ctx := context.Background()
	for _, tc := range []struct {
		name          string
		what          string
		off           int32
		want          string
		unseenWhenOff bool
	}{
		{"a write into the freed block", "write", 8, "written after it was freed, at offset +16 (seen when the run ended)", true},
		{"a write into QuickJS's own header of the freed block", "write", -8, "written after it was freed, at offset +0 (seen when the run ended)", false},
		{"a write just past the freed block", "write", 24, "written after it was freed, at offset +32 (seen when the run ended)", false},
		{"a double free", "double free", 0, "used after it was freed (freed twice, or reallocated)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := e.testInstance(t)
			err := lifetimeError(t, in, tc.what, tc.off)
			if err == nil {
				var raw rawResult
				raw, err = in.exec(ctx, "1 + 1", "null", 16<<20, 0, false, 1)
				if err == nil {
					t.Fatalf("the run after the error: status %d (%.100s), no fault", raw.status, raw.result)
				}
			}
			var hf *HeapFault
			if !errors.As(err, &hf) {
				t.Fatalf("got %v, want a *HeapFault", err)
			}
			if !strings.Contains(hf.Text, tc.want) || !strings.Contains(hf.Text, "checked heap: block ") {
				t.Fatalf("got %q, want it to name the block and say %q", hf.Text, tc.want)
			}
		})
		if !tc.unseenWhenOff {
			continue
		}
		t.Run(tc.name+", with the lifetime checks off", func(t *testing.T) {
			in := e.testInstance(t)
			setLifetimes(t, in, false)
			if err := lifetimeError(t, in, tc.what, tc.off); err != nil {
				t.Fatalf("with the lifetime checks off: %v", err)
			}
			raw, err := in.exec(ctx, "1 + 1", "null", 16<<20, 0, false, 1)
			if err != nil || raw.status != statusOK || string(raw.result) != "2" {
				t.Fatalf("with the lifetime checks off the error must go unseen: status %d (%.100s), err %v", raw.status, raw.result, err)
			}
		})
	}
}

// The quarantine is bounded, and a block is verified as it leaves it: a
// write into a freed block is seen while the run that frees a few
// megabytes after it is still running, not only at its end.
func TestCheckedHeapVerifiesWhatLeavesTheQuarantine(t *testing.T) {
	e := testEngine(t, 64<<20)
	in := e.testInstance(t)
	if err := lifetimeError(t, in, "write", 0); err != nil {
		t.Fatal(err)
	}
	// 64 KiB strings made and dropped: 8 MiB of frees, twice the quarantine
	_, err := in.exec(context.Background(), `let n = 0; for (let i = 0; i < 128; i++) n += ("x" + i).repeat(1 << 16).length; n`, "null", 16<<20, 0, false, 1)
	var hf *HeapFault
	if !errors.As(err, &hf) || !strings.Contains(hf.Text, "written after it was freed, at offset +8 (seen as it left the quarantine)") {
		t.Fatalf("got %v, want a *HeapFault seen as the block left the quarantine", err)
	}
}
