//go:build cgo

package lockdown

import "runtime"

// cMargin is what the C library maps beyond a pure-Go build's needs, in a
// cgo build (the race detector's too): threads are created by
// pthread_create, each with an 8 MiB stack mapping (the default
// RLIMIT_STACK), and glibc's malloc reserves 64 MiB arenas, up to 8 per
// CPU. It allows for 64 threads and every arena.
func cMargin() uint64 {
	return uint64(8*runtime.NumCPU())*(64<<20) + 64*(8<<20)
}
