//go:build race

package lockdown_test

// raceEnabled: the race detector's shadow memory reserves terabytes of
// address space, so no RLIMIT_AS can be tried.
const raceEnabled = true
