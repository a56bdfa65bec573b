// Package lockdown confines the process that runs guests, as a defence in
// depth behind WebAssembly: should a guest ever escape the wasm sandbox into
// native code, the process it lands in can open nothing, reach no network,
// start no process, map no new executable code, trace or signal no other
// process and raise none of its limits.
//
// Apply is called once, in the worker, after everything that needs the
// outside world is done: the engine compiled and warmed (its compilation
// cache read), the socket to the server and the log pipe wrapped in
// *os.File. From then on the process only computes, maps and unmaps
// anonymous memory, and reads and writes the descriptors it already has.
// Apply is irreversible and covers every thread, present and future.
//
// So the worker does before Apply whatever needs a file, a new descriptor
// or the system: quickjs.New and Warm; os.NewFile for its descriptors, with
// fd 3 set non-blocking first if it is to use the netpoller (its epoll
// instance is created then), or net.FileConn (a dup); os.Hostname,
// os.Getwd, os.Getuid and the like (Apply itself loads time.Local, which
// reads /etc/localtime on its first use). After Apply those
// fail with EPERM, as do os/exec, net.Dial, sendmsg/recvmsg (so no
// SCM_RIGHTS, and no UnixConn.WriteMsgUnix), shutdown (CloseWrite) and
// fcntl. fd 2 must be a pipe or a socket: with RLIMIT_FSIZE 0 a write to a
// regular file fails. The engine's process-kill timer keeps working, and so
// does the Go runtime (threads, signals, GOMAXPROCS updates, garbage
// collection).
//
// What Apply does, in order:
//
//   - Resource limits, soft and hard alike so that they cannot be raised:
//     RLIMIT_CORE 0 (no core dump ever holds guest memory), RLIMIT_FSIZE 0
//     (no regular file can be written, should one be open: writes fail with
//     EFBIG, and Go ignores the SIGXFSZ), and, when asked, RLIMIT_AS and
//     RLIMIT_NOFILE. RLIMIT_NPROC is deliberately not used: it counts the
//     threads of every process of the user, server included, and root is
//     exempt; "no new process" is enforced by the filter instead.
//   - PR_SET_DUMPABLE 0: no other process of the same user can ptrace it or
//     read its memory through /proc/PID/mem, and no core is dumped.
//   - PR_SET_NO_NEW_PRIVS 1: no execve could ever gain privileges (none is
//     allowed anyway), and the filter can be installed without
//     CAP_SYS_ADMIN.
//   - A seccomp-bpf filter, synchronised to all threads (TSYNC), that
//     allows only the system calls listed in this package's allowlist and
//     makes every other one fail with EPERM (clone3 with ENOSYS, so that a
//     C library falls back to clone, which the filter then judges). An
//     errno rather than a kill: the Go runtime and the engine handle a
//     failed call, a test can observe it, and the worker stays alive to
//     report.
//
// Refused, among everything not allowed: socket, socketpair, connect, bind,
// listen, accept, accept4, sendmsg and recvmsg (so no descriptor can be
// passed in or out over the server's socket), open, openat, openat2,
// creat, memfd_create, dup and friends, execve, execveat, fork, vfork,
// clone without CLONE_THREAD (a new process rather than a thread), clone3
// (ENOSYS), ptrace, process_vm_readv and process_vm_writev, kill and tgkill
// aimed at any other process, pidfd_*, mount, umount2, pivot_root, chroot,
// unshare, setns, bpf, perf_event_open, keyctl, add_key, request_key,
// io_uring_*, userfaultfd, personality, prctl other than PR_SET_VMA,
// setrlimit and prlimit64 (so the limits above stay), seccomp, mmap and
// mprotect with PROT_EXEC (no new executable code: wazero's code is
// compiled and mapped before Apply), madvise with any advice but those the
// runtime gives (so no MADV_HWPOISON, MADV_MERGEABLE), chdir, fchdir, mkdir, rmdir, unlink,
// rename, link, symlink, chmod, chown, truncate and the *at forms of all of
// them, ioctl, fcntl, uname, sysinfo and the set*id family.
//
// Deliberately allowed (see allowlist for who needs each): reading and
// writing existing descriptors (read, write, pread64 for the Go runtime's
// cgroup limit files) and closing them; the netpoller's epoll_pwait and
// epoll_ctl on the epoll descriptor created before Apply; anonymous memory
// (mmap and mprotect without PROT_EXEC, munmap, brk, madvise with
// DONTNEED, FREE, HUGEPAGE, NOHUGEPAGE, DONTDUMP or COLLAPSE); threads
// (clone with CLONE_THREAD, exit, futex, set_robust_list, rseq); signals
// within the process (rt_sig*, sigaltstack, tgkill and kill to its own
// pid); clocks, sleeps and POSIX timers (the engine's kill timer);
// getrandom; exit_group.
package lockdown

import (
	"errors"
	"fmt"
)

// Options are the resource limits Apply sets on top of those it always
// sets (RLIMIT_CORE and RLIMIT_FSIZE to 0).
type Options struct {
	// AddressSpaceBytes is RLIMIT_AS, soft and hard; 0 leaves it. See
	// AddressSpaceFor: a limit too small makes the Go runtime crash when it
	// next needs memory, so it must cover every linear memory the engine
	// can hold at once. It cannot be used in a race-detector build, whose
	// shadow memory alone reserves terabytes of address space.
	AddressSpaceBytes uint64
	// OpenFiles is RLIMIT_NOFILE, soft and hard; 0 leaves it. Since no
	// descriptor can be created after Apply it matters only as a second
	// wall; it must exceed the highest descriptor number in use.
	OpenFiles uint64
}

// Status says which protections are on, for the start-up log and the
// service's capabilities document. After a failed Apply it says which ones
// were applied before the failure.
type Status struct {
	// ResourceLimits: RLIMIT_CORE and RLIMIT_FSIZE are 0, and the limits of
	// Options are set, soft and hard.
	ResourceLimits bool `json:"resourceLimits"`
	// Undumpable: PR_SET_DUMPABLE is 0.
	Undumpable bool `json:"undumpable"`
	// NoNewPrivs: PR_SET_NO_NEW_PRIVS is set.
	NoNewPrivs bool `json:"noNewPrivs"`
	// Seccomp: the system-call filter is installed on every thread.
	Seccomp bool `json:"seccomp"`
}

// All reports whether every protection is on.
func (s Status) All() bool { return s.ResourceLimits && s.Undumpable && s.NoNewPrivs && s.Seccomp }

// ErrUnsupported is returned by Apply where the lock-down does not exist
// (any system but Linux, or a Linux architecture without an allowlist).
var ErrUnsupported = errors.New("lockdown: not supported on this system")

// ErrApplied is returned by a second call of Apply: the first one's
// filter refuses what Apply needs, so the process is already locked down
// (or half-way, if the first one failed).
var ErrApplied = errors.New("lockdown: Apply was already called")

func limitError(what string, err error) error {
	return fmt.Errorf("lockdown: %s: %w", what, err)
}
