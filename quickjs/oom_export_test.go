//go:build checkedengine

package quickjs

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// RefusedRun is how a run under the checked heap's out-of-memory knob
// ended (RunRefusingForTests).
type RefusedRun struct {
	// Outcome is the run's typed outcome, when the guest returned.
	Outcome spi.Outcome
	// Trap is the guest's failure, as wazero or the checked heap reported
	// it, when it did not return: a *HeapFault (a damaged red zone, a
	// write into a freed block, a double free), or a trap. Unlike the
	// engine's answer, QuickJS's own abort after a refused allocation is
	// a trap here too.
	Trap error
	// Allocations is how many allocations the limit could have refused the
	// run made (a new block, or a block grown), Refused how many the knob
	// refused, and Polls how many times the interrupt handler ran.
	Allocations, Refused uint32
	Polls                uint64
}

// RunRefusingForTests runs req in a fresh instance with the checked
// heap's knob set (sb_checked_fail_allocation): the nth allocation of the
// run that the limit could refuse is refused as the limit refuses one, or
// with fromOn every one from the nth on; n 0 refuses none. cpuBudget
// bounds the run in interrupt polls (0: none); the run's wall clock is
// req's, at which the guest is terminated. Only the checked engine has
// the knob; no script reaches it.
func (e *Engine) RunRefusingForTests(ctx context.Context, req spi.Request, n uint32, fromOn bool, cpuBudget uint64) (RefusedRun, error) {
	if err := e.compile(ctx); err != nil {
		return RefusedRun{}, err
	}
	in, err := newInstance(ctx, e.rt, e.compiled, e.mem, e.image)
	if err != nil {
		return RefusedRun{}, err
	}
	defer in.close()
	on := uint64(0)
	if fromOn {
		on = 1
	}
	if _, err := in.mod.ExportedFunction("sb_checked_fail_allocation").Call(ctx, uint64(n), on); err != nil {
		return RefusedRun{}, fmt.Errorf("sb_checked_fail_allocation: %w", err)
	}
	st := &runState{deadline: time.Now().Add(req.Limits.WallClock)}
	callCtx, cancel := context.WithDeadline(context.WithValue(ctx, runStateKey{}, st), st.deadline.Add(e.cfg.grace))
	defer cancel()
	var r RefusedRun
	counts := func() error {
		for name, dst := range map[string]*uint32{"sb_checked_allocations": &r.Allocations, "sb_checked_refused": &r.Refused} {
			v, err := in.mod.ExportedFunction(name).Call(ctx)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*dst = uint32(v[0])
		}
		return nil
	}
	trapped := func(trap error) (RefusedRun, error) {
		r.Trap = trap
		if !in.mod.IsClosed() {
			if err := counts(); err != nil {
				return RefusedRun{}, err
			}
		}
		return r, nil
	}
	// the compile (sb_compile), as the engine compiles a script it has
	// not kept, and then the run: both count, and both may be refused
	if _, err := in.compileScript(callCtx, req.Script, e.cfg.maxMemory); err != nil {
		if errors.Is(err, errGuestMemory) {
			return RefusedRun{}, err
		}
		return trapped(err)
	}
	ip, err := in.put(ctx, req.InputJSON)
	if err != nil {
		return RefusedRun{}, err
	}
	res, callErr := in.run.Call(callCtx, uint64(ip), uint64(len(req.InputJSON)), uint64(req.Limits.MemoryBytes), cpuBudget, 1)
	returned := time.Now()
	if callErr != nil {
		return trapped(callErr)
	}
	if err := counts(); err != nil {
		return RefusedRun{}, err
	}
	o, err := in.readOutcome(ctx)
	if err != nil {
		return RefusedRun{}, err
	}
	raw := rawResult{status: int32(res[0]), polls: o.polls, peak: o.peak, compileError: o.compileError, returned: returned}
	switch raw.status {
	case statusOK, statusThrew, statusInputInvalid:
		if raw.result, err = in.bytes(o.resultPtr, o.resultLen); err != nil {
			return RefusedRun{}, err
		}
	}
	if raw.status == statusThrew && o.nameLen >= 0 {
		if raw.name, err = in.bytes(o.namePtr, uint32(o.nameLen)); err != nil {
			return RefusedRun{}, err
		}
		raw.hasName = true
	}
	rep, err := e.toResult(ctx, execResult{raw: raw, end: returned}, st, req.Limits.MemoryBytes)
	if err != nil {
		return RefusedRun{}, err
	}
	r.Outcome, r.Polls = rep.Outcome, raw.polls
	return r, nil
}

// SizesCorpusForTests is the committed corpus of FuzzBuiltinSizes
// (testdata/fuzz/FuzzBuiltinSizes), each file's script by its name, and
// the memory limit its runs have.
func SizesCorpusForTests() (map[string]string, int64, error) {
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzBuiltinSizes", "*"))
	if err != nil {
		return nil, 0, err
	}
	out := make(map[string]string, len(files))
	for _, f := range files {
		data, err := readCorpusBytes(f)
		if err != nil {
			return nil, 0, err
		}
		out[filepath.Base(f)] = sizesDecode(data)
	}
	return out, sizesMemoryBytes, nil
}
