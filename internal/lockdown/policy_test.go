package lockdown

import (
	"slices"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
)

var arches = map[string]*arch.Info{goarchAMD64: arch.X86_64, goarchARM64: arch.AARCH64}

// TestAllowlistNames: every allowed name is a system call of its
// architecture, listed once (the filter's library also refuses an unknown
// name, but only on the architecture being built).
func TestAllowlistNames(t *testing.T) {
	for goarch, info := range arches {
		seen := map[string]bool{}
		for _, name := range append(Allowed(goarch), refusedENOSYS...) {
			if _, ok := info.SyscallNames[name]; !ok {
				t.Errorf("%s: %q is no system call there", goarch, name)
			}
			if seen[name] {
				t.Errorf("%s: %q listed twice", goarch, name)
			}
			seen[name] = true
		}
	}
}

// mustRefuse are calls the filter must never allow, whatever is added to
// the allowlist later (those absent on an architecture are skipped there).
var mustRefuse = []string{
	"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "sendmsg", "recvmsg",
	"sendto", "recvfrom", "sendmmsg", "recvmmsg",
	"open", "openat", "openat2", "creat", "open_by_handle_at", "name_to_handle_at", "memfd_create",
	"dup", "dup2", "dup3", "fcntl", "ioctl", "pipe", "pipe2", "eventfd2", "epoll_create1",
	"execve", "execveat", "fork", "vfork", "clone3", "wait4", "waitid",
	"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp",
	"tkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal", "pidfd_getfd",
	"mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "fsopen", "fsmount", "move_mount", "open_tree",
	"bpf", "perf_event_open", "keyctl", "add_key", "request_key",
	"io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "personality",
	"setrlimit", "prlimit64", "seccomp", "mremap", "pkey_mprotect", "remap_file_pages", "mbind", "migrate_pages", "move_pages",
	"chdir", "fchdir", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2",
	"link", "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "chown", "fchown", "fchownat", "lchown",
	"truncate", "ftruncate", "setxattr", "fsetxattr", "utimensat",
	"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "capset",
	"reboot", "kexec_load", "init_module", "finit_module", "delete_module", "swapon", "acct", "syslog",
	"sethostname", "setdomainname", "settimeofday", "clock_settime", "adjtimex", "iopl", "ioperm", "modify_ldt",
	"uname", "sysinfo", "quotactl", "lookup_dcookie", "vhangup", "landlock_create_ruleset",
}

func TestDangerousCallsRefused(t *testing.T) {
	for goarch, info := range arches {
		allowed := Allowed(goarch)
		for _, name := range mustRefuse {
			if _, exists := info.SyscallNames[name]; !exists {
				continue
			}
			if slices.Contains(allowed, name) {
				t.Errorf("%s: %q is allowed", goarch, name)
			}
		}
	}
}

// TestPolicyAssembles builds the filter for the architecture under test;
// the other's names are checked by TestAllowlistNames.
func TestPolicyAssembles(t *testing.T) {
	if _, ok := arches[goarchHere]; !ok {
		t.Skip("no allowlist for " + goarchHere)
	}
	pol, err := buildPolicy(goarchHere, 12345)
	if err != nil {
		t.Fatal(err)
	}
	insts, err := pol.Assemble()
	if err != nil {
		t.Fatal(err)
	}
	if len(insts) > 4096 { // BPF_MAXINSNS
		t.Fatalf("%d instructions, more than a filter may have", len(insts))
	}
	if _, err := buildPolicy("riscv64", 1); err == nil {
		t.Errorf("a policy for an architecture without an allowlist")
	}
}
