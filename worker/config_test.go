package worker

import (
	"strings"
	"testing"
)

// New reports every option out of its range at once, the engine's by the
// engine's own checks, before any worker starts.
func TestNewReportsEveryInvalidOption(t *testing.T) {
	_, err := New(Options{Concurrent: 0, Spares: 9, Lockdown: "sometimes",
		Engine: EngineOptions{MaxMemoryBytes: 4 << 30, PoolSize: 65}})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"Concurrent must be >= 1, got 0",
		"Spares must be in [0, 8], got 9",
		`Lockdown must be required, best-effort or off, got "sometimes"`,
		"Engine.MaxMemoryBytes must be in [1 MiB, 2 GiB], got 4294967296",
		"Engine.PoolSize must be in [0, 64], got 65",
		"Engine.HardKillGrace must be in (0, 1m], got 0s",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}
