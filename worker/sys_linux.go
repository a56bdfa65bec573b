package worker

import (
	"os"
	"strconv"
	"syscall"
)

// sysProcAttr: the worker dies with the server (PR_SET_PDEATHSIG), and has a
// process group of its own, so that a terminal's signals reach the server
// only.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// closeInheritedOnExec marks every descriptor of this process above 2
// close-on-exec. Go opens its own that way, but a descriptor this process
// inherited without the flag would otherwise pass on to every worker.
func closeInheritedOnExec() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// socketpair is a connected pair of Unix stream sockets, both close-on-exec
// (the child's end is passed explicitly, as fd 3).
func socketpair() ([2]int, error) {
	return syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
}
