//go:build race

package effect_test

// raceDetector is whether the test binary has the race detector, which
// shuffles the scheduler's order of runnable goroutines.
const raceDetector = true
