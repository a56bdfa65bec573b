package quickjs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
)

// memImage is the state every run starts from: the linear memory the
// set-up leaves (_initialize, sb_init), as the bytes of [stack, size). The
// shadow stack below, [0, stack), is zeros in the image: when a call
// returns its frames are dead, and no code reads below the stack pointer,
// which is back at the top; keeping them zero is what lets the host clear
// the stack cheaply (reset). The guest's only mutable global, the stack
// pointer, is at the stack's top whenever a call returned (reset checks it
// is), and its table is never written (the module has no instruction that
// writes one, TestModuleStateIsItsMemory), so the memory is the whole of
// an instance's state between calls.
//
// An instance is made to hold the image once, when it is built, and again
// after each of its runs (reset): so every run starts from the same bytes,
// whatever the runs before it did (docs/security.md, "Fresh per run").
type memImage struct {
	size  uint32      // bytes of linear memory the image covers
	stack uint32      // the shadow stack's end: [0, stack) is zeros
	brkAt uint32      // where the guest keeps the end of its heap (sb_layout)
	flat  []byte      // the bytes of [stack, size)
	spans []imageSpan // [stack, size) whole, ascending, disjoint: runs of flat
}

// imageSpan is a run of pages of an image: their bytes, or zeros when data
// is nil.
type imageSpan struct {
	off  uint32
	n    uint32
	data []byte
}

const imagePage = 4096

// Where reset keeps memory resident: the top stackResident bytes of the
// stack, which most runs reach, and linear memory up to residentBytes,
// which holds the set-up image, the image of a 100 KB script and the heap
// of its run over a 16 KiB input; it hands the rest of what a run touched
// back to the kernel, after which it reads as zeros (memory_linux.go). A
// page handed back costs a fault when a later run touches it, several
// times what clearing it costs. An instance whose memory grew past
// resetMaxBytes is closed instead: its mapping goes back to the memory
// pool, whose release keeps it (zeroed) or unmaps it.
const (
	stackResident = 128 << 10
	residentBytes = 4 << 20
	resetMaxBytes = 8 << 20
)

// captureImage runs the module's set-up once, _initialize (wasi-libc's
// constructors), sb_init (the QuickJS runtime, context and console) and
// sb_layout, and returns the linear memory it leaves as the image every
// instance is restored to. The only state of the image that differs
// between two set-ups is Math.random's seed, which every run replaces, and
// the set-up reads no clock (TestImageMatchesFreshSetUp).
func captureImage(ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, mem *memoryPool) (*memImage, error) {
	in, err := setUpInstance(ctx, r, cm, mem)
	if err != nil {
		return nil, err
	}
	defer in.close()
	res, err := in.mod.ExportedFunction("sb_layout").Call(ctx)
	if err != nil {
		return nil, fmt.Errorf("quickjs: sb_layout: %w", err)
	}
	size := in.mem.Size()
	lay, ok := in.mem.Read(uint32(res[0]), 8)
	if !ok {
		return nil, fmt.Errorf("quickjs: sb_layout answered an out-of-range address %#x", res[0])
	}
	img := &memImage{size: size, stack: binary.LittleEndian.Uint32(lay), brkAt: binary.LittleEndian.Uint32(lay[4:])}
	if img.stack == 0 || img.stack%imagePage != 0 || img.stack >= size || img.brkAt < img.stack || img.brkAt > size-4 {
		return nil, fmt.Errorf("quickjs: the shim's layout (stack %d, heap end at %d) does not fit its %d-byte memory", img.stack, img.brkAt, size)
	}
	if sp, err := in.stackPointerAt(ctx); err != nil || sp != img.stack {
		return nil, fmt.Errorf("quickjs: after the set-up the stack pointer is %#x, not the stack's top %#x (%v)", sp, img.stack, err)
	}
	full, ok := in.mem.Read(0, size)
	if !ok {
		return nil, errors.New("quickjs: reading the set-up's memory failed")
	}
	img.flat = bytes.Clone(full[img.stack:])
	for off := img.stack; off < size; off += imagePage {
		page := img.flat[off-img.stack : off-img.stack+imagePage]
		zero := isZero(page)
		if n := len(img.spans); n > 0 && (img.spans[n-1].data == nil) == zero {
			last := &img.spans[n-1]
			last.n += uint32(len(page))
			if !zero {
				last.data = img.flat[last.off-img.stack : last.off-img.stack+last.n]
			}
			continue
		}
		sp := imageSpan{off: off, n: uint32(len(page))}
		if !zero {
			sp.data = page
		}
		img.spans = append(img.spans, sp)
	}
	return img, nil
}

// isZero reports whether b holds only zeros.
func isZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// write makes [stack, size) of mem the image's bytes; below, mem must be
// zeros already.
func (img *memImage) write(mem []byte) {
	for _, sp := range img.spans {
		if sp.data == nil {
			clear(mem[sp.off : sp.off+sp.n])
		} else {
			copy(mem[sp.off:], sp.data)
		}
	}
}

// restore makes a new instance's memory the image: grown to the image's
// size, its data segments over zeros, then the image written over it.
func (img *memImage) restore(in *instance) error {
	if in.mem.Size() < img.size {
		if _, ok := in.mem.Grow((img.size - in.mem.Size()) / wasmPage); !ok {
			return fmt.Errorf("quickjs: growing a new instance's memory to the %d-byte set-up image failed", img.size)
		}
	}
	mem, ok := in.mem.Read(0, in.mem.Size())
	if !ok {
		return errors.New("quickjs: reading a new instance's memory failed")
	}
	img.write(mem)
	return nil
}

// clearStack makes the shadow stack of in zeros, as it is in the image:
// its top stackResident bytes cleared in place, the rest handed back to the
// kernel. No call may be in progress.
func (img *memImage) clearStack(mem []byte) {
	hot := img.stack - min(stackResident, img.stack)
	discardPages(mem[:hot])
	clear(mem[hot:img.stack])
}

// deepCallsBytes is how deep in the shadow stack a run may reach and keep
// its instance's call handles (instance.newCalls). A run's native stack
// grows with its shadow stack (the engine's recursion moves both; a C
// recursion that moved only the native one would meet no bound of the
// engine's and trap, and an instance whose call trapped is closed), at
// about 60 native bytes for each shadow byte when a script recurses as
// deep as the engine allows: past 32 KiB of shadow stack, a run may have
// grown a native stack of a couple of MiB, which its instance would hold.
const deepCallsBytes = 32 << 10

// wentDeep reports whether the run that ended in the instance reached
// deeper than deepCallsBytes into the shadow stack: whether the page
// there holds a byte the run wrote (the image's stack is zeros, and a
// frame writes its locals). It is asked before reset clears the stack.
func (img *memImage) wentDeep(in *instance) bool {
	if img.stack < deepCallsBytes {
		return false
	}
	at := img.stack - deepCallsBytes - imagePage
	page, ok := in.mem.Read(at, imagePage)
	if !ok {
		return false
	}
	return !bytes.Equal(page, zeroPage[:])
}

// zeroPage is a page of zeros, to compare a page of memory with.
var zeroPage [imagePage]byte

// reset makes the memory of an instance whose run ended the image again,
// every byte of it: the stack zeros, [stack, size) the image's bytes, and
// all the memory above the image zeros, however the run left it. It is
// what lets one instance serve run after run, each from the image, and
// costs a fraction of building an instance. It refuses (false) an instance
// that cannot serve again: closed (its guest was terminated), grown past
// resetMaxBytes, or with its stack pointer anywhere but the stack's top,
// which only a call that did not return leaves (the memory would then not
// be the instance's whole state); the caller closes it.
//
// Where a run may have written is not known, so nothing is left to what it
// says: the guest's end of heap (sb.brk) only decides which of the memory
// above the image is cleared in place and which is handed back to the
// kernel, and both end as zeros.
func (img *memImage) reset(in *instance) bool {
	if in.mod.IsClosed() {
		return false
	}
	if sp, err := in.stackPointerAt(context.Background()); err != nil || sp != img.stack {
		return false
	}
	size := in.mem.Size()
	if size > resetMaxBytes || size < img.size {
		return false
	}
	mem, ok := in.mem.Read(0, size)
	if !ok {
		return false
	}
	used := binary.LittleEndian.Uint32(mem[img.brkAt:])
	used = min(max(used, img.size), size, residentBytes)
	used = (used + imagePage - 1) / imagePage * imagePage

	img.clearStack(mem)
	img.write(mem)
	if used > img.size {
		clear(mem[img.size:used])
	}
	if size > max(used, img.size) {
		discardPages(mem[max(used, img.size):size])
	}
	return true
}
