package spi

import "fmt"

// Bounds are the limits that decide a run's answer before it starts, the
// answers no retry can change (docs/spi.md, "Answers no retry can change").
// They are the SPI's because a remote backend's clients need them too: the
// effect applies them to every evaluation, on both of the service's routes;
// a client applies them only to a request it cannot send, one whose body is
// over the service's maxRequestBytes. A zero member bounds nothing.
type Bounds struct {
	// MaxScriptBytes bounds a script sent by value.
	MaxScriptBytes int64
	// MinMemoryBytes is the least memory limit anything runs in.
	MinMemoryBytes int64
	// MaxInputBytes bounds the input's JSON text.
	MaxInputBytes int64
}

// Settled returns the outcome b decides for a run of a script of
// scriptBytes (negative for a script by reference, which its store bounds)
// under a memory limit of memoryBytes (zero for the service's default,
// which is never below its floor) on an input of inputBytes of JSON text,
// and true; or false when b leaves the answer to a run. The bounds
// are checked in one order, so that a request over two of them has one
// answer wherever it is decided:
//
//   - a script over MaxScriptBytes is the script's RangeError naming both
//     sizes: the size is the script's alone, and it must shrink;
//   - a memory limit below MinMemoryBytes is the memory limit: nothing runs
//     in less, as in process the first allocation fails;
//   - an input over MaxInputBytes is inputTooLarge: the input must shrink.
func (b Bounds) Settled(scriptBytes, memoryBytes, inputBytes int64) (Outcome, bool) {
	switch {
	case b.MaxScriptBytes > 0 && scriptBytes > b.MaxScriptBytes:
		name := "RangeError"
		return Threw(&name, fmt.Sprintf("the script is %d bytes, over the service's maxScriptBytes of %d", scriptBytes, b.MaxScriptBytes)), true
	case b.MinMemoryBytes > 0 && memoryBytes > 0 && memoryBytes < b.MinMemoryBytes:
		return LimitHit(LimitMemory), true
	case b.MaxInputBytes > 0 && inputBytes > b.MaxInputBytes:
		return InputTooLarge(), true
	}
	return Outcome{}, false
}
