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

// instance is one wasm instance with a QuickJS runtime and context already
// created (restored from the set-up image). It serves exactly one run and is
// then closed. It holds a handle of each export a run calls, and no more:
// making one is a cost of every instance.
type instance struct {
	mod                 api.Module
	mem                 api.Memory
	alloc, run, outcome api.Function
}

// required lists the exports the host needs; a module without one of them is
// refused with a specific error.
var required = []string{"sb_alloc", "sb_init", "sb_run", "sb_outcome"}

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

// memImage is the linear memory the set-up leaves, held as what it changes
// in the memory of a module just instantiated: the runs of 4 KiB pages in
// which the two differ. A new instance's memory is always that of a module
// just instantiated (its data segments over zeros: a mapping is new or
// zeroed before reuse), so writing these spans into it gives exactly the
// set-up's memory. Most of the 1.25 MiB is the 1 MiB shadow stack, nearly
// all zeros, and need not be written at all.
type memImage struct {
	size  uint32      // bytes of linear memory after the set-up
	spans []imageSpan // ascending, disjoint
}

type imageSpan struct {
	off  uint32
	data []byte
}

const imagePage = 4096

// captureImage runs the module's set-up once, _initialize (wasi-libc's
// constructors) and sb_init (the QuickJS runtime, context and console), and
// returns the linear memory it leaves: the state every instance starts from.
// Writing it into a new instance costs a fraction of running the set-up
// again. The set-up leaves nothing else behind: its one mutable global, the
// stack pointer, is back at its initial value when sb_init returns, and the
// only state of the image that differs between two set-ups is Math.random's
// time-based seed, which newInstance replaces (TestImageMatchesFreshSetUp).
func captureImage(ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, mem *memoryPool) (*memImage, error) {
	in, err := setUpInstance(ctx, r, cm, mem)
	if err != nil {
		return nil, err
	}
	full, ok := in.mem.Read(0, in.mem.Size())
	if !ok {
		in.close()
		return nil, errors.New("quickjs: reading the set-up's memory failed")
	}
	full = bytes.Clone(full)
	in.close()
	raw, err := instantiate(ctx, r, cm, mem, moduleConfig)
	if err != nil {
		return nil, err
	}
	// what a new instance's memory holds once grown to the image's size: its
	// data segments, then zeros (memory only grows, so it is never longer)
	base := make([]byte, len(full))
	got, ok := raw.mem.Read(0, raw.mem.Size())
	if ok {
		copy(base, got)
	}
	raw.close()
	if !ok {
		return nil, errors.New("quickjs: reading a new instance's memory failed")
	}

	img := &memImage{size: uint32(len(full))}
	for off := 0; off < len(full); off += imagePage {
		end := min(off+imagePage, len(full))
		if bytes.Equal(full[off:end], base[off:end]) {
			continue
		}
		if n := len(img.spans); n > 0 && int(img.spans[n-1].off)+len(img.spans[n-1].data) == off {
			img.spans[n-1].data = full[img.spans[n-1].off:end]
			continue
		}
		img.spans = append(img.spans, imageSpan{off: uint32(off), data: full[off:end]})
	}
	// keep only the changed pages, not the whole set-up memory behind them
	for i := range img.spans {
		img.spans[i].data = bytes.Clone(img.spans[i].data)
	}
	return img, nil
}

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
// image: the per-run set-up that the pool keeps off the request path. The
// run gives it a Math.random seed of its own (exec).
func newInstance(ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, mem *memoryPool, image *memImage) (*instance, error) {
	in, err := instantiate(ctx, r, cm, mem, moduleConfig)
	if err != nil {
		return nil, err
	}
	if in.mem.Size() < image.size {
		if _, ok := in.mem.Grow((image.size - in.mem.Size()) / wasmPage); !ok {
			in.close()
			return nil, fmt.Errorf("quickjs: growing a new instance's memory to the %d-byte set-up image failed", image.size)
		}
	}
	for _, sp := range image.spans {
		if !in.mem.Write(sp.off, sp.data) {
			in.close()
			return nil, fmt.Errorf("quickjs: writing the set-up image at %d failed", sp.off)
		}
	}
	return in, nil
}

// instantiate makes an instance of the module, its memory from the pool.
func instantiate(ctx context.Context, r wazero.Runtime, cm wazero.CompiledModule, mem *memoryPool, cfg wazero.ModuleConfig) (*instance, error) {
	mod, err := r.InstantiateModule(experimental.WithMemoryAllocator(ctx, mem.allocator()), cm, cfg)
	if err != nil {
		return nil, fmt.Errorf("quickjs: instantiate: %w", err)
	}
	return &instance{
		mod:     mod,
		mem:     mod.Memory(),
		alloc:   mod.ExportedFunction("sb_alloc"),
		run:     mod.ExportedFunction("sb_run"),
		outcome: mod.ExportedFunction("sb_outcome"),
	}, nil
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

// exec runs the script on the input inside the instance, Math.random
// seeded with seed.
func (in *instance) exec(ctx context.Context, script, input string, memLimit int64, cpuBudget uint64, wantLogs bool, seed uint64) (rawResult, error) {
	sp, err := in.put(ctx, script)
	if err != nil {
		return rawResult{}, fmt.Errorf("copy script in: %w", err)
	}
	ip, err := in.put(ctx, input)
	if err != nil {
		return rawResult{}, fmt.Errorf("copy input in: %w", err)
	}
	res, err := in.run.Call(ctx, uint64(sp), uint64(len(script)), uint64(ip), uint64(len(input)), uint64(memLimit), cpuBudget, seed)
	returned := time.Now()
	if err != nil {
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
		if !errors.As(err, &exit) {
			if o, oerr := in.readOutcome(ctx); oerr == nil {
				if o.oom && isAbort(err) {
					return rawResult{status: statusLimitMemory}, nil
				}
				return rawResult{polls: o.polls, peak: o.peak}, err
			}
		}
		return rawResult{}, err
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
