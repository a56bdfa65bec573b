package spi

import "time"

// Usage is what one run used, measured where each part happened: the
// effect's steps (Fetch, Verify) by the effect, the engine's (Setup,
// Compile, Run, Serialise), the CPU time, the CPU budget and the peak heap by the engine.
// It is reported beside the outcome, never inside it: the outcome is a pure
// function of (script, input, limits), the usage is not. A zero field is a
// step the run did not reach or a figure its backend does not measure.
type Usage struct {
	// Fetch is the script store's read of a script asked for by reference.
	Fetch time.Duration
	// Verify is the check of the script's bytes against its reference.
	Verify time.Duration
	// Setup is the engine's preparation of the run: an instance taken in
	// the state the run starts from, the input copied in and parsed.
	Setup time.Duration
	// Compile is the script's compile, in the run that compiled it; zero
	// in a run that started from the script as an earlier run's compile
	// left it, and in a run that did not get that far.
	Compile time.Duration
	// Run is the script's evaluation: its global code and the jobs after it.
	Run time.Duration
	// Serialise is the result's JSON text made and copied out.
	Serialise time.Duration
	// CPU is the processor time the run took in the engine.
	CPU time.Duration
	// CPUBudgetUsed and CPUBudget are the interrupt polls the run took and
	// the budget it had (the cpu limit's unit); CPUBudget is zero for an
	// engine without a CPU budget.
	CPUBudgetUsed, CPUBudget uint64
	// PeakMemoryBytes is the most the guest's heap held at once, and
	// MemoryLimitBytes the run's memory limit it is measured against.
	PeakMemoryBytes, MemoryLimitBytes int64
}

// Phase is one phase of a run in its Usage: its name as every report of a
// usage writes it (the answers' phasesMs, Server-Timing, the log line, the
// metrics' phase attribute) and its field.
type Phase struct {
	Name string
	D    *time.Duration
	// Added: a phase later than the first version of the wire, which a
	// reader takes as zero when an answer of an earlier service lacks it
	// (docs/spi.md, "How the wire evolves").
	Added bool
}

// Phases are u's phases in the order of a run: the one list of them.
func (u *Usage) Phases() [6]Phase {
	return [...]Phase{{"fetch", &u.Fetch, false}, {"verify", &u.Verify, false}, {"setup", &u.Setup, false},
		{"compile", &u.Compile, true}, {"run", &u.Run, false}, {"serialise", &u.Serialise, false}}
}

// MemoryUse is the peak heap as a fraction of the memory limit; false
// without a limit.
func (u Usage) MemoryUse() (float64, bool) {
	return fraction(float64(u.PeakMemoryBytes), float64(u.MemoryLimitBytes))
}

// CPUBudgetUse is the CPU budget used as a fraction of the budget; false
// for an engine without a CPU budget.
func (u Usage) CPUBudgetUse() (float64, bool) {
	return fraction(float64(u.CPUBudgetUsed), float64(u.CPUBudget))
}

func fraction(used, limit float64) (float64, bool) {
	if limit <= 0 {
		return 0, false
	}
	return used / limit, true
}
