package quickjs

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Answers of sandbox.poll, mirrored in c/interrupt.c.
const (
	pollContinue  = 0
	pollDeadline  = 1
	pollCancelled = 2
)

// WASI errno values used by the few WASI functions the guest imports.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
)

// Phases the guest marks (sandbox.mark), mirrored in c/sandbox.h.
const (
	markRun       = 1
	markSerialise = 2
)

// runState is what the host knows about the run in progress. The guest's
// interrupt handler reaches it through sandbox.poll, its phase marks
// through sandbox.mark.
type runState struct {
	deadline  time.Time
	cancelled atomic.Bool
	// marks are when the run's phases began (markRun, markSerialise);
	// written and read only by the goroutine that runs the guest
	marks [3]time.Time
	// frozen: a replayable run, whose every clock reads now (nanoseconds
	// since 1970) and does not move
	frozen bool
	now    int64
	// trap: the run traps at its first poll (WithTrapForTests)
	trap bool
}

type runStateKey struct{}

// passed reports whether the run's deadline has passed at t: the one test
// of it, which the interrupt handler asks while the guest runs and the
// classification of a run that ended asks of the moment the guest returned
// (docs/spi.md, "Timing").
func (st *runState) passed(t time.Time) bool { return !t.Before(st.deadline) }

// poll answers the guest's interrupt handler: continue, deadline passed, or
// the caller went away.
func poll(ctx context.Context, _ api.Module, stack []uint64) {
	st, _ := ctx.Value(runStateKey{}).(*runState)
	switch {
	case st == nil: // sb_init and friends run without a run state
		stack[0] = pollContinue
	case st.cancelled.Load():
		stack[0] = pollCancelled
	case st.passed(time.Now()):
		stack[0] = pollDeadline
	default:
		stack[0] = pollContinue
	}
}

// mark notes when a phase of the run begins, for the run's usage.
func mark(ctx context.Context, _ api.Module, stack []uint64) {
	st, _ := ctx.Value(runStateKey{}).(*runState)
	if phase := uint32(stack[0]); st != nil && phase < uint32(len(st.marks)) {
		st.marks[phase] = time.Now()
	}
}

// HeapFault is how a run of the checked engine ends when its heap finds a
// red zone damaged (c/redzone.c): an out-of-bounds write inside the engine.
// The engine that ships never reports one.
type HeapFault struct {
	// What the checked heap found: which zone of which block, and where.
	Text string
}

func (f *HeapFault) Error() string { return f.Text }

// fault is checked.fault, which only the checked engine imports: its heap
// found a red zone damaged. It ends the guest's call with a *HeapFault,
// before the trap the guest would raise next.
func fault(_ context.Context, mod api.Module, stack []uint64) {
	text, ok := mod.Memory().Read(uint32(stack[0]), uint32(stack[1]))
	if !ok {
		text = []byte("checked heap: a red zone was damaged (the report itself is out of range)")
	}
	panic(&HeapFault{Text: string(text)})
}

// instantiateHost defines the only functions the guest can import: our
// sandbox.poll, served by pollFn (poll, but for tests), sandbox.mark, four
// WASI functions wasi-libc links against (instantiateWASI, which also
// defines checked.fault, which only the checked engine imports), implemented here rather than by
// wazero's WASI so that nothing else (files, environment, arguments, random,
// sockets) exists to be reached. Output is swallowed: console output goes
// through the shim's own buffer.
func instantiateHost(ctx context.Context, r wazero.Runtime, pollFn api.GoModuleFunc) error {
	i32 := api.ValueTypeI32
	_, err := r.NewHostModuleBuilder("sandbox").
		NewFunctionBuilder().
		WithGoModuleFunction(pollFn, nil, []api.ValueType{i32}).
		Export("poll").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(mark), []api.ValueType{i32}, nil).
		Export("mark").
		Instantiate(ctx)
	if err != nil {
		return err
	}
	return instantiateWASI(ctx, r)
}

// pollTrap is the answer of the host's poll, under WithTrapForTests, that
// makes trappingSandbox's poll trap.
const pollTrap = 3

// trappingSandbox is the module "sandbox" of an engine built with
// WithTrapForTests, in wasm: its poll asks the host's poll (the module
// "sandbox-host") and executes unreachable when the host answers
// pollTrap, so that the run traps inside the guest, in wasm code, with the
// text of a trap the engine's own code raises; its mark is the host's.
//
//	(module
//	  (import "sandbox-host" "poll" (func $poll (result i32)))
//	  (import "sandbox-host" "mark" (func $mark (param i32)))
//	  (func (export "poll") (result i32) (local i32)
//	    call $poll
//	    local.tee 0
//	    i32.const 3
//	    i32.eq
//	    if
//	      unreachable
//	    end
//	    local.get 0)
//	  (export "mark" (func $mark)))
var trappingSandbox = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
	0x01, 0x09, 0x02, 0x60, 0x00, 0x01, 0x7f, 0x60, 0x01, 0x7f, 0x00, // types: () -> i32, (i32) -> ()
	0x02, 0x29, 0x02, // imports: 2
	0x0c, 's', 'a', 'n', 'd', 'b', 'o', 'x', '-', 'h', 'o', 's', 't', 0x04, 'p', 'o', 'l', 'l', 0x00, 0x00, // function 0: poll, of type 0
	0x0c, 's', 'a', 'n', 'd', 'b', 'o', 'x', '-', 'h', 'o', 's', 't', 0x04, 'm', 'a', 'r', 'k', 0x00, 0x01, // function 1: mark, of type 1
	0x03, 0x02, 0x01, 0x00, // functions: function 2, of type 0
	0x07, 0x0f, 0x02, // exports: 2
	0x04, 'p', 'o', 'l', 'l', 0x00, 0x02, // "poll": function 2
	0x04, 'm', 'a', 'r', 'k', 0x00, 0x01, // "mark": function 1, the host's
	0x0a, 0x13, 0x01, 0x11, // code: 1 body of 17 bytes
	0x01, 0x01, 0x7f, // one local, an i32
	0x10, 0x00, 0x22, 0x00, 0x41, pollTrap, 0x46, // call 0, local.tee 0, i32.const pollTrap, i32.eq
	0x04, 0x40, 0x00, 0x0b, // if: unreachable, end
	0x20, 0x00, 0x0b, // local.get 0, end
}

// instantiateTrappingHost is instantiateHost for an engine built with
// WithTrapForTests: the host's poll and mark as the module "sandbox-host",
// its poll answering pollTrap to a run the option chose, and
// trappingSandbox as the module "sandbox" the guest imports.
func instantiateTrappingHost(ctx context.Context, r wazero.Runtime, pollFn api.GoModuleFunc) error {
	trapping := func(ctx context.Context, mod api.Module, stack []uint64) {
		if st, _ := ctx.Value(runStateKey{}).(*runState); st != nil && st.trap {
			stack[0] = pollTrap
			return
		}
		pollFn(ctx, mod, stack)
	}
	i32 := api.ValueTypeI32
	_, err := r.NewHostModuleBuilder("sandbox-host").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(trapping), nil, []api.ValueType{i32}).
		Export("poll").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(mark), []api.ValueType{i32}, nil).
		Export("mark").
		Instantiate(ctx)
	if err != nil {
		return err
	}
	if _, err := r.InstantiateWithConfig(ctx, trappingSandbox, wazero.NewModuleConfig().WithName("sandbox")); err != nil {
		return fmt.Errorf("the trapping sandbox module: %w", err)
	}
	return instantiateWASI(ctx, r)
}

// instantiateWASI defines the four WASI functions of instantiateHost, and
// checked.fault, the checked engine's report of a damaged red zone.
func instantiateWASI(ctx context.Context, r wazero.Runtime) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	if _, err := r.NewHostModuleBuilder("checked").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(fault), []api.ValueType{i32, i32}, nil).
		Export("fault").
		Instantiate(ctx); err != nil {
		return err
	}
	_, err := r.NewHostModuleBuilder("wasi_snapshot_preview1").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(clockTimeGet), []api.ValueType{i32, i64, i32}, []api.ValueType{i32}).
		Export("clock_time_get").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(fdWrite), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		Export("fd_write").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(badf), []api.ValueType{i32}, []api.ValueType{i32}).
		Export("fd_close").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(badf), []api.ValueType{i32, i64, i32, i32}, []api.ValueType{i32}).
		Export("fd_seek").
		Instantiate(ctx)
	return err
}

var monotonicBase = time.Now()

// clockTimeGet serves Date.now (realtime) and the monotonic clock to a
// run: the host's, or a replayable run's frozen instant for both. Outside a run (sb_init, the set-up an image is taken of) both clocks
// read 0: QuickJS seeds Math.random from the time as it creates a context,
// and a set-up that read no clock leaves no time in the image, on the stack
// or in the heap, so that every set-up makes the same bytes. sb_run reseeds
// Math.random from the host for each run.
func clockTimeGet(ctx context.Context, mod api.Module, stack []uint64) {
	id, out := uint32(stack[0]), uint32(stack[2])
	st, inRun := ctx.Value(runStateKey{}).(*runState)
	var ns uint64
	switch {
	case id != 0 && id != 1:
		stack[0] = errnoInval
		return
	case !inRun:
	case st.frozen:
		ns = uint64(st.now)
	case id == 0: // realtime
		ns = uint64(time.Now().UnixNano())
	default: // monotonic
		ns = uint64(time.Since(monotonicBase).Nanoseconds())
	}
	if !mod.Memory().WriteUint64Le(out, ns) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

// fdWrite accepts and discards whatever libc writes to stdout or stderr.
func fdWrite(_ context.Context, mod api.Module, stack []uint64) {
	fd, iovs, n, out := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	if fd != 1 && fd != 2 {
		stack[0] = errnoBadf
		return
	}
	mem := mod.Memory()
	buf, ok := mem.Read(iovs, n*8)
	if !ok {
		stack[0] = errnoFault
		return
	}
	var total uint32
	for i := uint32(0); i < n; i++ {
		total += binary.LittleEndian.Uint32(buf[i*8+4:])
	}
	if !mem.WriteUint32Le(out, total) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

func badf(_ context.Context, _ api.Module, stack []uint64) { stack[0] = errnoBadf }
