//go:build linux

package lockdown_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probe is one call tried from Go after Apply (and, for the control, without
// it).
type probe struct {
	name string
	run  func() error
	// locked is the outcome wanted after Apply; "" means EPERM.
	locked string
	// control: "" wants anything but the locked outcome without Apply;
	// "skip" runs the probe only under the filter (it would create a
	// process or trace the child); "any" runs it and checks nothing (its
	// result depends on the machine: privileges, sysctls).
	control string
}

// missing is a path that exists nowhere: a call that reaches the kernel
// fails on it with ENOENT, one the filter refuses with EPERM first.
const missing = "/nonexistent-lockdown-probe"

var atFDCWD = func() uintptr { fd := unix.AT_FDCWD; return uintptr(fd) }() // -100

func errno(_, _ uintptr, e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

// closing returns a call's error, closing the descriptor it made.
func closing(r, _ uintptr, e syscall.Errno) error {
	if e != 0 {
		return e
	}
	_ = syscall.Close(int(r))
	return nil
}

func sys(n uintptr, a ...uintptr) (uintptr, uintptr, syscall.Errno) {
	var args [6]uintptr
	copy(args[:], a)
	return syscall.Syscall6(n, args[0], args[1], args[2], args[3], args[4], args[5])
}

func ptr(s string) uintptr {
	b, _ := syscall.BytePtrFromString(s)
	return uintptr(unsafe.Pointer(b))
}

func probes(cfg childConfig) []probe {
	pid, ppid := os.Getpid(), os.Getppid()
	existing := filepath.Join(cfg.Dir, "existing")
	nobody := uintptr(0x3fffffff) // beyond any pid_max
	ps := []probe{
		// network
		{name: "socket inet", run: func() error { return closing(sys(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)) }},
		{name: "socket unix", run: func() error { return closing(sys(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0)) }},
		{name: "socket netlink", run: func() error {
			return closing(sys(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE))
		}},
		{name: "socketpair", run: func() error {
			fds, err := syscall.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if err == nil {
				syscall.Close(fds[0])
				syscall.Close(fds[1])
			}
			return err
		}},
		{name: "net.Dial tcp 127.0.0.1", run: func() error {
			c, err := net.Dial("tcp", cfg.DialAddr)
			if err == nil {
				c.Close()
			}
			return err
		}},
		{name: "connect", run: func() error { return errno(sys(unix.SYS_CONNECT, ^uintptr(0), 0, 0)) }},
		{name: "bind", run: func() error { return errno(sys(unix.SYS_BIND, ^uintptr(0), 0, 0)) }},
		{name: "listen", run: func() error { return errno(sys(unix.SYS_LISTEN, ^uintptr(0), 0)) }},
		{name: "accept4", run: func() error { return errno(sys(unix.SYS_ACCEPT4, ^uintptr(0), 0, 0, 0)) }},
		{name: "accept", run: func() error { return errno(sys(unix.SYS_ACCEPT, ^uintptr(0), 0, 0)) }},
		{name: "sendmsg", run: func() error { return errno(sys(unix.SYS_SENDMSG, ^uintptr(0), 0, 0)) }},
		{name: "recvmsg", run: func() error { return errno(sys(unix.SYS_RECVMSG, ^uintptr(0), 0, 0)) }},

		// files
		{name: "os.Open /etc/hostname", run: func() error { return closeFile(os.Open("/etc/hostname")) }},
		{name: "os.Open existing file", run: func() error { return closeFile(os.Open(existing)) }},
		{name: "os.Open /proc/self/mem", run: func() error { return closeFile(os.Open("/proc/self/mem")) }},
		{name: "os.Create new file", run: func() error { return closeFile(os.Create(filepath.Join(cfg.Dir, "created"))) }},
		{name: "openat2", run: func() error {
			how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC}
			return closing(sys(unix.SYS_OPENAT2, atFDCWD, ptr(existing), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how)))
		}},
		{name: "memfd_create", run: func() error { return closing(sys(unix.SYS_MEMFD_CREATE, ptr("probe"), 0)) }},
		{name: "dup", run: func() error { return closing(sys(unix.SYS_DUP, 2)) }},
		{name: "mkdir", run: func() error { return os.Mkdir(filepath.Join(cfg.Dir, "made"), 0o700) }},
		{name: "unlink", run: func() error { return os.Remove(filepath.Join(cfg.Dir, "victim")) }},
		{name: "rename", run: func() error { return os.Rename(filepath.Join(cfg.Dir, "movable"), filepath.Join(cfg.Dir, "moved")) }},
		{name: "symlink", run: func() error { return os.Symlink(existing, filepath.Join(cfg.Dir, "link")) }},
		{name: "chmod", run: func() error { return os.Chmod(existing, 0o600) }},
		{name: "chdir", run: func() error { return os.Chdir(cfg.Dir) }},
		{name: "ioctl", run: func() error { return errno(sys(unix.SYS_IOCTL, 2, unix.TIOCGWINSZ, 0)) }, control: "any"},
		{name: "fcntl", run: func() error { return errno(sys(unix.SYS_FCNTL, 2, unix.F_GETFD)) }},

		// processes
		{name: "os/exec /bin/true", run: func() error {
			c := exec.Command("/bin/true")
			c.Stdin, c.Stdout, c.Stderr = os.Stderr, os.Stderr, os.Stderr // no open of /dev/null
			return c.Run()
		}},
		{name: "syscall.ForkExec /bin/true", run: func() error {
			child, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{Files: []uintptr{2, 2, 2}})
			if err == nil {
				var ws syscall.WaitStatus
				_, err = syscall.Wait4(child, &ws, 0, nil)
			}
			return err
		}},
		{name: "execve", run: func() error { return syscall.Exec(missing, []string{"probe"}, nil) }},
		{name: "execveat", run: func() error {
			argv := []*byte{nil}
			return errno(sys(unix.SYS_EXECVEAT, atFDCWD, ptr(missing), uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&argv[0])), 0))
		}},
		// CLONE_SIGHAND without CLONE_VM is invalid: the kernel says EINVAL,
		// the filter (no CLONE_THREAD: a process) EPERM first.
		{name: "clone process", run: func() error {
			return errno(sys(unix.SYS_CLONE, unix.CLONE_SIGHAND|uintptr(syscall.SIGCHLD), 0, 0, 0, 0))
		}},
		// CLONE_THREAD without CLONE_SIGHAND is invalid too, but passes
		// the filter: the kernel's EINVAL shows threads are allowed.
		{name: "clone thread (invalid)", run: func() error { return errno(sys(unix.SYS_CLONE, unix.CLONE_THREAD, 0, 0, 0, 0)) }, locked: "EINVAL"},
		{name: "clone3", run: func() error { return errno(sys(unix.SYS_CLONE3, 0, 0)) }, locked: "ENOSYS"},
		{name: "wait4", run: func() error { return errno(sys(unix.SYS_WAIT4, ^uintptr(0), 0, 0, 0)) }},
		{name: "new threads", run: func() error { return onNewThreads(16) }},

		// other processes
		{name: "ptrace attach", run: func() error { return errno(sys(unix.SYS_PTRACE, unix.PTRACE_ATTACH, nobody, 0, 0)) }},
		{name: "ptrace traceme", run: func() error { return errno(sys(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0, 0)) }, control: "skip"},
		{name: "process_vm_readv", run: func() error { return vmRead(pid) }},
		{name: "process_vm_writev", run: func() error {
			return errno(sys(unix.SYS_PROCESS_VM_WRITEV, uintptr(pid), 0, 0, 0, 0, 0))
		}},
		{name: "kill parent", run: func() error { return syscall.Kill(ppid, 0) }},
		{name: "kill all", run: func() error { return syscall.Kill(-1, 0) }},
		{name: "tgkill parent", run: func() error { return syscall.Tgkill(ppid, ppid, 0) }},
		{name: "kill self", run: func() error { return syscall.Kill(pid, 0) }, locked: "ok"},
		{name: "tgkill self", run: func() error { return syscall.Tgkill(pid, syscall.Gettid(), 0) }, locked: "ok"},
		{name: "pidfd_open parent", run: func() error { return closing(sys(unix.SYS_PIDFD_OPEN, uintptr(ppid), 0)) }},
		{name: "pidfd_send_signal", run: func() error { return errno(sys(unix.SYS_PIDFD_SEND_SIGNAL, ^uintptr(0), 0, 0, 0)) }},

		// limits
		{name: "setrlimit", run: func() error {
			var l syscall.Rlimit
			if err := syscall.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil {
				return err
			}
			return errno(sys(unix.SYS_SETRLIMIT, unix.RLIMIT_NOFILE, uintptr(unsafe.Pointer(&l))))
		}},
		{name: "prlimit64 raise core", run: func() error {
			l := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
			return errno(sys(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_CORE, uintptr(unsafe.Pointer(&l)), 0))
		}, control: "any"},
		{name: "prlimit64 read", run: func() error {
			var l unix.Rlimit
			return errno(sys(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_AS, 0, uintptr(unsafe.Pointer(&l))))
		}},

		// the kernel's larger surfaces
		{name: "unshare", run: func() error { return errno(sys(unix.SYS_UNSHARE, 0)) }},
		{name: "setns", run: func() error { return errno(sys(unix.SYS_SETNS, ^uintptr(0), 0)) }},
		{name: "mount", run: func() error {
			return errno(sys(unix.SYS_MOUNT, ptr("none"), ptr(missing), ptr("tmpfs"), 0, ptr("")))
		}},
		{name: "umount2", run: func() error { return errno(sys(unix.SYS_UMOUNT2, ptr(missing), 0)) }},
		{name: "chroot", run: func() error { return errno(sys(unix.SYS_CHROOT, ptr(missing))) }},
		{name: "bpf", run: func() error { return errno(sys(unix.SYS_BPF, ^uintptr(0), 0, 0)) }, control: "any"},
		{name: "perf_event_open", run: func() error { return closing(sys(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0)) }},
		{name: "keyctl", run: func() error { return errno(sys(unix.SYS_KEYCTL, 0xffff, 0, 0, 0, 0)) }},
		{name: "add_key", run: func() error { return errno(sys(unix.SYS_ADD_KEY, 0, 0, 0, 0, 0)) }},
		{name: "io_uring_setup", run: func() error { return closing(sys(unix.SYS_IO_URING_SETUP, 1, 0)) }, control: "any"},
		{name: "userfaultfd", run: func() error { return closing(sys(unix.SYS_USERFAULTFD, unix.O_CLOEXEC)) }, control: "any"},
		{name: "personality", run: func() error { return errno(sys(unix.SYS_PERSONALITY, 0xffffffff)) }},
		{name: "prctl get dumpable", run: func() error { return errno(sys(unix.SYS_PRCTL, unix.PR_GET_DUMPABLE)) }},
		{name: "prctl set name", run: func() error { return errno(sys(unix.SYS_PRCTL, unix.PR_SET_NAME, ptr("probe"))) }},
		{name: "seccomp", run: func() error {
			action := uint32(unix.SECCOMP_RET_ALLOW)
			return errno(sys(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action))))
		}},
		{name: "uname", run: func() error {
			var u syscall.Utsname
			return syscall.Uname(&u)
		}},
		{name: "sysinfo", run: func() error {
			var si syscall.Sysinfo_t
			return syscall.Sysinfo(&si)
		}},
		{name: "setuid", run: func() error { return errno(syscall.RawSyscall(unix.SYS_SETUID, uintptr(os.Getuid()), 0, 0)) }},

		// memory
		{name: "mmap exec", run: func() error {
			b, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ|syscall.PROT_EXEC, syscall.MAP_PRIVATE|syscall.MAP_ANON)
			if err == nil {
				syscall.Munmap(b)
			}
			return err
		}},
		{name: "mprotect exec", run: func() error {
			b, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
			if err != nil {
				return errors.New("mmap rw: " + err.Error())
			}
			defer syscall.Munmap(b)
			return syscall.Mprotect(b, syscall.PROT_READ|syscall.PROT_EXEC)
		}},
		{name: "mmap rw", run: func() error {
			b, err := syscall.Mmap(-1, 0, 1<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
			if err == nil {
				b[0] = 1
				err = syscall.Munmap(b)
			}
			return err
		}, locked: "ok"},
		{name: "madvise mergeable", run: func() error { return advise(unix.MADV_MERGEABLE) }, control: "any"},
		{name: "madvise dontneed", run: func() error { return advise(unix.MADV_DONTNEED) }, locked: "ok"},
		{name: "getrandom", run: func() error {
			b := make([]byte, 16)
			return errno(sys(unix.SYS_GETRANDOM, uintptr(unsafe.Pointer(&b[0])), 16, 0))
		}, locked: "ok"},
	}
	return append(ps, archProbes()...)
}

// advise gives advice on a fresh anonymous page.
func advise(advice int) error {
	b, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return errors.New("mmap rw: " + err.Error())
	}
	defer syscall.Munmap(b)
	return syscall.Madvise(b, advice)
}

func closeFile(f *os.File, err error) error {
	if err == nil {
		f.Close()
	}
	return err
}

// vmRead reads a word of this process's memory the way a debugger reads
// another's.
func vmRead(pid int) error {
	src, dst := uint64(42), uint64(0)
	local := unix.Iovec{Base: (*byte)(unsafe.Pointer(&dst)), Len: 8}
	remote := unix.Iovec{Base: (*byte)(unsafe.Pointer(&src)), Len: 8}
	return errno(sys(unix.SYS_PROCESS_VM_READV, uintptr(pid), uintptr(unsafe.Pointer(&local)), 1, uintptr(unsafe.Pointer(&remote)), 1, 0))
}

// onNewThreads tries socket() on n goroutines locked to their threads at
// once, so that the runtime must start threads after Apply: each must be
// refused (new threads inherit the filter); the first other outcome is
// returned.
func onNewThreads(n int) error {
	var (
		wg      sync.WaitGroup
		ready   sync.WaitGroup
		release = make(chan struct{})
		errs    = make([]error, n)
	)
	ready.Add(n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ready.Done()
			<-release
			errs[i] = closing(sys(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0))
		}()
	}
	ready.Wait()
	close(release)
	wg.Wait()
	for _, err := range errs[1:] {
		if (err == nil) != (errs[0] == nil) || (err != nil && err.Error() != errs[0].Error()) {
			return errors.New("threads disagree: " + outcome(errs[0]) + " and " + outcome(err))
		}
	}
	return errs[0]
}
