package lockdown

import (
	"fmt"
	"slices"

	seccomp "github.com/elastic/go-seccomp-bpf"
)

// rule is a group of system calls the filter allows, and who needs them.
// names exist on amd64 and arm64 alike; amd64 lists the legacy forms that
// arm64 never had. The list is what strace -f showed a worker making after
// lock-down (an engine evaluating normal scripts, memory and CPU bombs,
// wall-clock runaways, large results and console output, with garbage
// collections, in pure-Go and cgo/race builds), plus the calls marked as
// needed on paths such a run does not take.
type rule struct {
	why   string
	names []string
	amd64 []string
}

var allowlist = []rule{
	{why: "I/O on the descriptors opened before Apply: the server's socket, the log pipe; " +
		"close for descriptors the program lets go of",
		names: []string{"read", "write", "close"}},
	{why: "the Go runtime's sysmon re-reads the cgroup CPU limit files it opened at start-up " +
		"(pread64) and the CPU affinity (sched_getaffinity) to update GOMAXPROCS",
		names: []string{"pread64", "sched_getaffinity"}},
	{why: "the netpoller waits on, and registers and unregisters descriptors with, " +
		"the epoll instance created before Apply",
		names: []string{"epoll_pwait", "epoll_ctl"},
		amd64: []string{"epoll_wait"}},
	{why: "anonymous memory: the Go heap and stacks, the guests' linear memories " +
		"(quickjs/memory_linux.go), the C library's malloc in cgo builds (brk); " +
		"mmap and mprotect are allowed only without PROT_EXEC, madvise only with the " +
		"advice they give (conditions below)",
		names: []string{"munmap", "brk"}},
	{why: "threads of the Go runtime (and of the C library in cgo builds): clone only with " +
		"CLONE_THREAD (condition below), futexes, thread exit, and the C library's per-thread " +
		"registrations",
		names: []string{"futex", "exit", "set_robust_list", "rseq", "sched_yield", "gettid", "getpid"}},
	{why: "signals within the process: the runtime's handlers, masks and alternate stacks; " +
		"preemption and crash reports use tgkill and kill on the process's own pid " +
		"(conditions below)",
		names: []string{"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack"}},
	{why: "clocks and sleeps: the Go runtime (usleep, timers), time.Now where the vDSO is " +
		"missing, the kernel's restart of an interrupted sleep",
		names: []string{"clock_gettime", "clock_nanosleep", "nanosleep", "restart_syscall"},
		amd64: []string{"gettimeofday"}},
	{why: "the engine's process-kill timer (quickjs/killtimer_linux.go)",
		names: []string{"timer_create", "timer_settime", "timer_delete"}},
	{why: "crypto/rand (a seed for each guest's Math.random)",
		names: []string{"getrandom"}},
	{why: "the process's end",
		names: []string{"exit_group"}},
}

// Linux constants the conditions use (the same on amd64 and arm64).
const (
	cloneThread    = 0x10000    // CLONE_THREAD
	protExec       = 0x4        // PROT_EXEC
	prSetVMA       = 0x53564d41 // PR_SET_VMA: the Go runtime names its mappings
	madvDontNeed   = 4
	madvFree       = 8
	madvHugePage   = 14
	madvNoHugePage = 15
	madvDontDump   = 16
	madvCollapse   = 25
	errnoENOSYS    = 38
	goarchAMD64    = "amd64"
	goarchARM64    = "arm64"
)

// conditional lists the calls allowed only with some arguments.
func conditional(pid int) []seccomp.NameWithConditions {
	self := uint64(pid)
	rules := []seccomp.NameWithConditions{
		// A thread, never a process: fork and vfork are clone without
		// CLONE_THREAD.
		{Name: "clone", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.BitsSet, Value: cloneThread}}},
		// No new executable code.
		{Name: "mmap", Conditions: seccomp.ArgumentConditions{
			{Argument: 2, Operation: seccomp.BitsNotSet, Value: protExec}}},
		{Name: "mprotect", Conditions: seccomp.ArgumentConditions{
			{Argument: 2, Operation: seccomp.BitsNotSet, Value: protExec}}},
		// Signals to this process only: tgkill for preemption and
		// runtime.raise, kill for the runtime's crash path (raiseproc).
		{Name: "tgkill", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.Equal, Value: self}}},
		{Name: "kill", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.Equal, Value: self}}},
		// The Go runtime names its anonymous mappings (PR_SET_VMA,
		// PR_SET_VMA_ANON_NAME); every other prctl is refused.
		{Name: "prctl", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.Equal, Value: prSetVMA}}},
	}
	// The advice the Go runtime (DONTNEED, FREE, HUGEPAGE, NOHUGEPAGE,
	// COLLAPSE), the engine's memory pool (DONTNEED) and the C library and
	// race detector (DONTDUMP) give; not, say, HWPOISON or MERGEABLE.
	for _, advice := range []uint64{madvDontNeed, madvFree, madvHugePage, madvNoHugePage, madvDontDump, madvCollapse} {
		rules = append(rules, seccomp.NameWithConditions{Name: "madvise", Conditions: seccomp.ArgumentConditions{
			{Argument: 2, Operation: seccomp.Equal, Value: advice}}})
	}
	return rules
}

// refusedENOSYS fail with ENOSYS rather than EPERM: a C library (glibc's
// pthread_create, in cgo builds) tries clone3 first and falls back to
// clone only on ENOSYS.
var refusedENOSYS = []string{"clone3"}

// Allowed returns the names of the system calls the filter allows on
// goarch ("amd64" or "arm64"), some of them only with certain arguments
// (clone, mmap, mprotect, madvise, tgkill, kill, prctl).
func Allowed(goarch string) []string {
	var names []string
	for _, r := range allowlist {
		names = append(names, r.names...)
		if goarch == goarchAMD64 {
			names = append(names, r.amd64...)
		}
	}
	for _, c := range conditional(0) {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	return names
}

// buildPolicy is the filter for goarch, for the process pid.
func buildPolicy(goarch string, pid int) (seccomp.Policy, error) {
	if goarch != goarchAMD64 && goarch != goarchARM64 {
		return seccomp.Policy{}, fmt.Errorf("%w: no allowlist for %s", ErrUnsupported, goarch)
	}
	var plain []string
	for _, r := range allowlist {
		plain = append(plain, r.names...)
		if goarch == goarchAMD64 {
			plain = append(plain, r.amd64...)
		}
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionErrno, // EPERM
		Syscalls: []seccomp.SyscallGroup{
			{Names: refusedENOSYS, Action: seccomp.ActionErrno | errnoENOSYS},
			{Names: plain, NamesWithCondtions: conditional(pid), Action: seccomp.ActionAllow},
		},
	}, nil
}
