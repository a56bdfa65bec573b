//go:build linux

package lockdown

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Supported reports whether Apply exists here: Linux on amd64 or arm64.
// Whether the kernel has seccomp is known only from Apply's result.
func Supported() bool {
	return runtime.GOARCH == goarchAMD64 || runtime.GOARCH == goarchARM64
}

var (
	applyMu sync.Mutex
	applied bool // the process was changed (a call got past its checks)
)

// Apply locks the process down (see the package documentation): resource
// limits, PR_SET_DUMPABLE 0, PR_SET_NO_NEW_PRIVS and the seccomp filter, in
// that order, for every thread of the process. It is irreversible, and
// meant to be called once: after a call that got as far as changing the
// process, a later one returns ErrApplied. An error found before any change
// (an unsupported architecture, an address-space limit below what is
// already mapped) leaves the process as it was, with a zero Status. On any
// error the Status says what was applied, and the caller should not run
// guests (exit, and let the server report the worker as failed).
func Apply(opts Options) (Status, error) {
	var st Status
	applyMu.Lock()
	defer applyMu.Unlock()
	if applied {
		return st, ErrApplied
	}
	// Everything that can fail without a system call first, so that a bad
	// policy leaves the process as it was.
	pol, err := buildPolicy(runtime.GOARCH, os.Getpid())
	if err != nil {
		return st, err
	}
	insts, err := pol.Assemble()
	if err != nil {
		return st, fmt.Errorf("lockdown: assembling the filter: %w", err)
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return st, fmt.Errorf("lockdown: assembling the filter: %w", err)
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		prog[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	// time.Local is loaded on its first use, from /etc/localtime: load it
	// now, or every time printed after Apply would silently be UTC.
	_ = time.Local.String()
	if opts.AddressSpaceBytes > 0 {
		// A limit below what is mapped already would be accepted by the
		// kernel and fail the runtime's next mapping: refuse it here.
		if used, err := addressSpaceUsed(); err == nil && used >= opts.AddressSpaceBytes {
			return st, fmt.Errorf("lockdown: address-space limit %d bytes is below the %d bytes already mapped", opts.AddressSpaceBytes, used)
		}
	}

	// prctl(PR_SET_NO_NEW_PRIVS) marks the calling thread, and the seccomp
	// call requires its caller to be marked: both on one thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	// From here on the process changes: a failure leaves it half locked
	// down, and Apply cannot be tried again.
	applied = true

	limits := []struct {
		name     string
		resource int
		value    uint64
	}{
		{"RLIMIT_CORE", unix.RLIMIT_CORE, 0},
		{"RLIMIT_FSIZE", unix.RLIMIT_FSIZE, 0},
		{"RLIMIT_AS", unix.RLIMIT_AS, opts.AddressSpaceBytes},
		{"RLIMIT_NOFILE", unix.RLIMIT_NOFILE, opts.OpenFiles},
	}
	for i, l := range limits {
		if l.value == 0 && i >= 2 { // AS and NOFILE: 0 leaves them
			continue
		}
		if err := lower(l.resource, l.value); err != nil {
			return st, limitError("setting "+l.name, err)
		}
	}
	st.ResourceLimits = true

	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return st, limitError("PR_SET_DUMPABLE", err)
	}
	st.Undumpable = true

	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return st, limitError("PR_SET_NO_NEW_PRIVS", err)
	}
	st.NoNewPrivs = true

	// The seccomp call itself rather than the library's LoadFilter: with
	// TSYNC, a thread that cannot be synchronised is reported by a positive
	// return value (its id), with no filter installed anywhere, and
	// LoadFilter looks at the errno only.
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	switch {
	case e != 0:
		return st, limitError("installing the seccomp filter", e)
	case r != 0:
		return st, fmt.Errorf("lockdown: installing the seccomp filter: thread %d could not be synchronised; no filter is installed", r)
	}
	st.Seccomp = true
	return st, nil
}

// lower sets a resource's soft and hard limits to v, or to the hard limit
// where that is already lower (raising it is for privileged processes, and
// never the point).
func lower(resource int, v uint64) error {
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(resource, &cur); err != nil {
		return err
	}
	v = min(v, cur.Max)
	// syscall.Setrlimit rather than unix's: for RLIMIT_NOFILE it also drops
	// the limit the syscall package would restore in a child process.
	return syscall.Setrlimit(resource, &syscall.Rlimit{Cur: v, Max: v})
}

// addressSpaceUsed is the process's current VmSize.
func addressSpaceUsed() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmSize:")); ok {
			kb, err := strconv.ParseUint(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))), 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmSize in /proc/self/status")
}
