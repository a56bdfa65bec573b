package lockdown

// guestHeadroom mirrors quickjs's wasmHeadroom: a guest's linear memory is
// capped at the engine's maximum memory limit plus this much (its shadow
// stack, static data and the host's copies of script, input and result).
// The tests count the mappings of exactly LinearMemoryBytes, so a change on
// the engine's side shows there.
const guestHeadroom = 64 << 20

// LinearMemoryBytes is the address space one guest's linear memory
// reserves: the engine maps each at its maximum, rounded up to whole wasm
// pages (quickjs/memory_linux.go), whatever the guest uses of it.
func LinearMemoryBytes(maxMemoryBytes int64) uint64 {
	const page = 64 << 10
	return (uint64(maxMemoryBytes) + guestHeadroom + page - 1) / page * page
}

// RuntimeMargin is the address space RLIMIT_AS leaves beyond the guests'
// linear memories: the Go runtime, the heap, the compiled engine.
const RuntimeMargin = 1 << 30

// AddressSpaceFor is an RLIMIT_AS for a worker whose engine has the given
// maximum memory limit and can hold at most memories linear memories at
// once, each LinearMemoryBytes, plus RuntimeMargin.
func AddressSpaceFor(maxMemoryBytes int64, memories int) uint64 {
	return uint64(memories)*LinearMemoryBytes(maxMemoryBytes) + RuntimeMargin
}
