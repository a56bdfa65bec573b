package spi

import (
	"testing"
	"time"
)

// The phases are named as every report writes them, in the order of a run,
// and each is its own field: writing through one changes that field alone.
func TestUsagePhases(t *testing.T) {
	var u Usage
	want := []string{"fetch", "verify", "setup", "compile", "run", "serialise"}
	phases := u.Phases()
	for i, p := range phases {
		// only the compile came after the wire's first version
		if p.Added != (p.Name == "compile") {
			t.Errorf("phase %q: added %v", p.Name, p.Added)
		}
		if p.Name != want[i] {
			t.Errorf("phase %d is %q, want %q", i, p.Name, want[i])
		}
		*p.D = time.Duration(i + 1)
	}
	if got := (Usage{Fetch: 1, Verify: 2, Setup: 3, Compile: 4, Run: 5, Serialise: 6}); u != got {
		t.Errorf("written through the phases: %+v, want %+v", u, got)
	}
}

// A fraction of a limit is reported only where there is a limit.
func TestUsageFractions(t *testing.T) {
	u := Usage{PeakMemoryBytes: 16 << 20, MemoryLimitBytes: 64 << 20, CPUBudgetUsed: 3, CPUBudget: 12}
	if f, ok := u.MemoryUse(); !ok || f != 0.25 {
		t.Errorf("MemoryUse = %v, %v; want 0.25, true", f, ok)
	}
	if f, ok := u.CPUBudgetUse(); !ok || f != 0.25 {
		t.Errorf("CPUBudgetUse = %v, %v; want 0.25, true", f, ok)
	}
	if f, ok := (Usage{PeakMemoryBytes: 1, CPUBudgetUsed: 1}).MemoryUse(); ok || f != 0 {
		t.Errorf("MemoryUse without a limit = %v, %v; want 0, false", f, ok)
	}
	if f, ok := (Usage{CPUBudgetUsed: 1}).CPUBudgetUse(); ok || f != 0 {
		t.Errorf("CPUBudgetUse without a budget = %v, %v; want 0, false", f, ok)
	}
}
