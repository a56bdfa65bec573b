package quickjs

import (
	"context"
	"encoding/binary"
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
}

type runStateKey struct{}

// poll answers the guest's interrupt handler: continue, deadline passed, or
// the caller went away.
func poll(ctx context.Context, _ api.Module, stack []uint64) {
	st, _ := ctx.Value(runStateKey{}).(*runState)
	switch {
	case st == nil: // sb_init and friends run without a run state
		stack[0] = pollContinue
	case st.cancelled.Load():
		stack[0] = pollCancelled
	case !time.Now().Before(st.deadline):
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

// fault is sandbox.fault, which only the checked engine imports: its heap
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
// sandbox.poll, served by pollFn (poll, but for tests), sandbox.mark,
// sandbox.fault (the checked engine's only), and four WASI
// functions wasi-libc links against, implemented here rather than by
// wazero's WASI so that nothing else (files, environment, arguments, random,
// sockets) exists to be reached. Output is swallowed: console output goes
// through the shim's own buffer.
func instantiateHost(ctx context.Context, r wazero.Runtime, pollFn api.GoModuleFunc) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	_, err := r.NewHostModuleBuilder("sandbox").
		NewFunctionBuilder().
		WithGoModuleFunction(pollFn, nil, []api.ValueType{i32}).
		Export("poll").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(mark), []api.ValueType{i32}, nil).
		Export("mark").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(fault), []api.ValueType{i32, i32}, nil).
		Export("fault").
		Instantiate(ctx)
	if err != nil {
		return err
	}
	_, err = r.NewHostModuleBuilder("wasi_snapshot_preview1").
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
