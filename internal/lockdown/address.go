package lockdown

// RuntimeMargin is the address space RLIMIT_AS leaves beyond the guests'
// linear memories, for everything else the worker maps.
//
// The reasoning: a pure-Go program on 64-bit Linux reserves about 1.2 GiB
// of address space before main runs (the page allocator's summaries and
// the scavenger's index, mapped PROT_NONE, which cost no memory but count
// against RLIMIT_AS). The binary with its embedded engine, the compiled
// wasm code, goroutine stacks and the heap, which grows in 64 MiB arenas
// and holds copies of each run's input and result, add a few hundred MiB:
// a worker at the service's defaults (256 MiB guests, pool of 2), running
// memory bombs to the 256 MiB limit, 16 and 60 MiB results and frequent
// garbage collections, peaks at a VmPeak of 2.3 to 2.6 GiB with three
// (at times four) 320 MiB linear memories mapped, so at most about 1.6 GiB
// beside them. 2 GiB leaves a quarter of that again for a heap that a
// larger result grows, on top of the memories AddressSpaceFor counts but
// the engine rarely holds.
const RuntimeMargin = 2 << 30

// AddressSpaceFor is an RLIMIT_AS for a worker whose engine holds at most
// memories linear memories at once, each reserving linearMemoryBytes of
// address space (quickjs.LinearMemoryBytes of the engine's maximum memory
// limit, 320 MiB at the service's default of 256 MiB): memories ×
// linearMemoryBytes, plus RuntimeMargin, plus, in a cgo build, what the C
// library maps per thread.
//
// A quickjs.Engine holds at most quickjs.LinearMemoriesAtMost(poolSize):
// its pool, plus one instance its filler has built and waits to hand over,
// plus the running one, plus the two closed memories it keeps for reuse:
// 2 + 1 + 1 + 2 = 6 at the service's defaults, for a limit of 3.875 GiB in
// the pure-Go build the service ships. RuntimeMargin does not scale with
// the maximum, since the runtime's reservations do not: at small maximums
// it is most of the limit, and still above what a warm worker has mapped
// (about 1.3 GiB plus its memories). The engine is seen to hold three,
// at times four, in that case, as kept memories are reused by the next
// instance: the count is a bound, not the usual.
//
// Too small a limit makes the Go runtime fail when it next needs memory
// ("fatal error: out of memory"), killing the worker; too large costs
// nothing but the limit's point, which is that a compromised worker cannot
// map a great deal more than the engine can.
func AddressSpaceFor(linearMemoryBytes uint64, memories int) uint64 {
	return uint64(memories)*linearMemoryBytes + RuntimeMargin + cMargin()
}
