package quickjs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// Run statuses, mirrored in c/sandbox.h.
const (
	statusOK             = 0
	statusThrew          = 1
	statusLimitCPU       = 2
	statusLimitMemory    = 3
	statusLimitWallClock = 4
	statusCancelled      = 5
	statusInputTooLarge  = 6
	statusInputInvalid   = 7
	statusInternal       = 8
)

// Compile statuses (sb_compile), mirrored in c/sandbox.h.
const (
	compiledOK    = 0
	compiledThrew = 1
	compiledOOM   = 2
)

// instance is one wasm instance with a QuickJS runtime and context already
// created (restored from the set-up image). It serves one run at a time,
// and after each is reset to the image (memImage.reset) or closed. It holds
// a handle of each export a run calls, and no more: making one is a cost of
// every instance.
type instance struct {
	mod                          api.Module
	mem                          api.Memory
	alloc, compile, run, outcome api.Function
	stackPointer                 api.Function
	// spStack is stackPointerAt's call stack, kept so that the check every
	// reset makes allocates nothing.
	spStack [1]uint64
}

// required lists the exports the host needs; a module without one of them is
// refused with a specific error.
var required = []string{"sb_alloc", "sb_init", "sb_layout", "sb_compile", "sb_run", "sb_outcome", "sb_stack_pointer"}

func checkExports(cm wazero.CompiledModule) error {
	ex := cm.ExportedFunctions()
	for _, name := range required {
		if _, ok := ex[name]; !ok {
			return fmt.Errorf("quickjs: engine module lacks export %q", name)
		}
	}
	if _, ok := cm.ExportedMemories()["memory"]; !ok {
		return errors.New(`quickjs: engine module lacks exported "memory"`)
	}
	return nil
}

// moduleConfig is every instance's configuration; it is never modified (the
// With methods return copies). Instances start from a memory image, so no
// start function runs. The guest imports no random source, but left unset
// wazero seeds a deterministic math/rand source for every instance, a cost
// in every set-up; the system's CSPRNG costs nothing until read, and is the
// right answer should a later build import random_get.
var moduleConfig = wazero.NewModuleConfig().
	WithName("").
	WithStartFunctions().
	WithRandSource(rand.Reader)

// setUpInstance is an instance that ran the set-up itself.
func setUpInstance(ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, mem *memoryPool) (*instance, error) {
	in, err := instantiate(ctx, r, cm, mem, moduleConfig.WithStartFunctions("_initialize"))
	if err != nil {
		return nil, err
	}
	res, err := in.mod.ExportedFunction("sb_init").Call(ctx)
	if err != nil {
		in.close()
		return nil, fmt.Errorf("quickjs: sb_init: %w", err)
	}
	if rc := int32(res[0]); rc != 0 {
		in.close()
		return nil, fmt.Errorf("quickjs: sb_init failed with code %d", rc)
	}
	return in, nil
}

// newInstance instantiates the module and gives it the set-up's memory
// image: the set-up of an instance, which then serves run after run.
func newInstance(ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, mem *memoryPool, image *memImage) (*instance, error) {
	in, err := instantiate(ctx, r, cm, mem, moduleConfig)
	if err != nil {
		return nil, err
	}
	if err := image.restore(in); err != nil {
		in.close()
		return nil, err
	}
	return in, nil
}

// instantiate makes an instance of the module, its memory from the pool.
func instantiate(ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, mem *memoryPool, cfg wazero.ModuleConfig) (*instance, error) {
	mod, err := r.InstantiateModule(experimental.WithMemoryAllocator(ctx, mem.allocator()), cm, cfg)
	if err != nil {
		return nil, fmt.Errorf("quickjs: instantiate: %w", err)
	}
	in := &instance{mod: mod, mem: mod.Memory()}
	in.newCalls()
	return in, nil
}

// newCalls makes the handles of the exports a run calls afresh. A handle
// keeps the native stack its calls grew (wazero grows it by doubling, to
// tens of MiB for a recursion as deep as the engine allows, and never
// shrinks it): an instance that serves run after run takes new handles
// after a run that went deep (memImage.wentDeep), so that what that run
// grew is the collector's, not held for the instance's life. New handles
// cost far more than a reset, so a run that stayed shallow keeps them.
func (in *instance) newCalls() {
	in.alloc = in.mod.ExportedFunction("sb_alloc")
	in.compile = in.mod.ExportedFunction("sb_compile")
	in.run = in.mod.ExportedFunction("sb_run")
	in.outcome = in.mod.ExportedFunction("sb_outcome")
	in.stackPointer = in.mod.ExportedFunction("sb_stack_pointer")
}

func (in *instance) close() { _ = in.mod.Close(context.Background()) }

// isAbort reports whether a guest's call ended in the trap that abort and
// a failed assertion raise: the "unreachable" instruction. wazero has no
// exported value for it; its text is wazero's own, which no guest writes.
func isAbort(err error) bool {
	return strings.HasPrefix(err.Error(), "wasm error: unreachable")
}

// errGuestMemory reports that the guest could not hold a host buffer.
var errGuestMemory = errors.New("guest memory exhausted")

// put copies s into guest memory followed by a NUL byte (QuickJS's parser
// reads one past the given length) and returns its address.
func (in *instance) put(ctx context.Context, s string) (uint32, error) {
	res, err := in.alloc.Call(ctx, uint64(len(s)+1))
	if err != nil {
		return 0, err
	}
	p := uint32(res[0])
	if p == 0 {
		return 0, errGuestMemory
	}
	buf, ok := in.mem.Read(p, uint32(len(s)+1))
	if !ok {
		return 0, fmt.Errorf("guest returned an out-of-range buffer %#x", p)
	}
	copy(buf, s)
	buf[len(s)] = 0
	return p, nil
}

// outcomeSize is the size of the shim's outcome record (sb_outcome).
const outcomeSize = 48

// shimOutcome is the shim's outcome record, as sb_outcome lays it out.
type shimOutcome struct {
	resultPtr, resultLen uint32
	namePtr              uint32
	nameLen              int32 // -1: no name
	logPtr, logLen       uint32
	polls                uint64
	oom                  bool
	compileError         bool   // the script did not compile
	peak                 uint64 // the most heap the run held
}

// readOutcome calls sb_outcome and decodes the record it points at.
func (in *instance) readOutcome(ctx context.Context) (shimOutcome, error) {
	res, err := in.outcome.Call(ctx)
	if err != nil {
		return shimOutcome{}, err
	}
	b, ok := in.mem.Read(uint32(res[0]), outcomeSize)
	if !ok {
		return shimOutcome{}, fmt.Errorf("guest returned an out-of-range outcome record %#x", res[0])
	}
	le := binary.LittleEndian
	return shimOutcome{
		resultPtr: le.Uint32(b[0:]), resultLen: le.Uint32(b[4:]),
		namePtr: le.Uint32(b[8:]), nameLen: int32(le.Uint32(b[12:])),
		logPtr: le.Uint32(b[16:]), logLen: le.Uint32(b[20:]),
		polls:        le.Uint64(b[24:]),
		oom:          le.Uint32(b[32:]) != 0,
		compileError: le.Uint32(b[36:]) != 0,
		peak:         le.Uint64(b[40:]),
	}, nil
}

// bytes copies n bytes at p out of guest memory.
func (in *instance) bytes(p, n uint32) ([]byte, error) {
	b, ok := in.mem.Read(p, n)
	if !ok {
		return nil, fmt.Errorf("guest returned an out-of-range buffer %#x+%d", p, n)
	}
	return bytes.Clone(b), nil
}

// rawResult is what one run left in the instance.
type rawResult struct {
	status  int32
	result  []byte
	name    []byte
	hasName bool
	logs    []byte
	polls   uint64
	peak    uint64
	// compileError: the exception (statusThrew) is the parser's
	compileError bool
	// returned is when the guest's run returned: the end of the run's own
	// time, before the host read its outcome and copied its result out
	returned time.Time
}

// exec compiles the script and runs it on the input inside the instance
// (compileScript, then runCompiled), Math.random seeded with seed: a run
// with nothing kept.
func (in *instance) exec(ctx context.Context, script, input string, memLimit int64, cpuBudget uint64, wantLogs bool, seed uint64) (rawResult, error) {
	if _, err := in.compileScript(ctx, script, DefaultMaxMemoryBytes); err != nil {
		return in.failed(ctx, err)
	}
	return in.runCompiled(ctx, input, memLimit, cpuBudget, wantLogs, seed)
}

// compileScript copies the script in and compiles it (sb_compile) under
// the memory limit maxMemory, the engine's maximum; the instance keeps
// what the compile gave for runCompiled. It returns the compile's status
// (compiledOK, compiledThrew, compiledOOM).
func (in *instance) compileScript(ctx context.Context, script string, maxMemory int64) (int32, error) {
	sp, err := in.put(ctx, script)
	if err != nil {
		return 0, fmt.Errorf("copy script in: %w", err)
	}
	res, err := in.compile.Call(ctx, uint64(sp), uint64(len(script)), uint64(maxMemory))
	if err != nil {
		return 0, err
	}
	return int32(res[0]), nil
}

// failed is the result of a guest call that ended in err.
func (in *instance) failed(ctx context.Context, err error) (rawResult, error) {
	// A damaged red zone is an out-of-bounds write, whatever else
	// happened in the run.
	var hf *HeapFault
	if errors.As(err, &hf) {
		return rawResult{}, hf
	}
	// QuickJS stopping itself (abort, a failed assertion: the trap
	// "unreachable") after an allocation was refused is the memory
	// limit at work, reached through one of its allocation-failure
	// paths that gives up: report it as the limit, which it is,
	// deterministically. Any other trap is an access outside the
	// guest's memory, a memory-safety failure whatever came before it:
	// an engine fault. What the run used up to its trap is still the
	// shim's to say.
	var exit *sys.ExitError
	if !errors.As(err, &exit) && !errors.Is(err, errGuestMemory) {
		if o, oerr := in.readOutcome(ctx); oerr == nil {
			if o.oom && isAbort(err) {
				return rawResult{status: statusLimitMemory}, nil
			}
			return rawResult{polls: o.polls, peak: o.peak}, err
		}
	}
	return rawResult{}, err
}

// runCompiled runs the compiled script (compileScript) on the input inside
// the instance, Math.random seeded with seed.
func (in *instance) runCompiled(ctx context.Context, input string, memLimit int64, cpuBudget uint64, wantLogs bool, seed uint64) (rawResult, error) {
	ip, err := in.put(ctx, input)
	if err != nil {
		return rawResult{}, fmt.Errorf("copy input in: %w", err)
	}
	res, err := in.run.Call(ctx, uint64(ip), uint64(len(input)), uint64(memLimit), cpuBudget, seed)
	returned := time.Now()
	if err != nil {
		return in.failed(ctx, err)
	}
	o, err := in.readOutcome(ctx)
	if err != nil {
		return rawResult{}, err
	}
	out := rawResult{status: int32(res[0]), polls: o.polls, peak: o.peak, compileError: o.compileError, returned: returned}
	switch out.status {
	case statusOK, statusThrew, statusInputInvalid:
		if out.result, err = in.bytes(o.resultPtr, o.resultLen); err != nil {
			return rawResult{}, err
		}
	}
	if out.status == statusThrew && o.nameLen >= 0 {
		if out.name, err = in.bytes(o.namePtr, uint32(o.nameLen)); err != nil {
			return rawResult{}, err
		}
		out.hasName = true
	}
	if wantLogs {
		if out.logs, err = in.bytes(o.logPtr, o.logLen); err != nil {
			return rawResult{}, err
		}
	}
	return out, nil
}

// stackPointerAt is the guest's stack pointer, as sb_stack_pointer reads
// it: no call may be in progress.
func (in *instance) stackPointerAt(ctx context.Context) (uint32, error) {
	if err := in.stackPointer.CallWithStack(ctx, in.spStack[:]); err != nil {
		return 0, err
	}
	return uint32(in.spStack[0]), nil
}
