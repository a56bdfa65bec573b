//go:build !linux

package worker

import "syscall"

// sysProcAttr: the worker has a process group of its own, so that a
// terminal's signals reach the server only.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// closeInheritedOnExec is a no-op here: there is no /proc to list
// descriptors from.
func closeInheritedOnExec() {}

// socketpair is a connected pair of Unix stream sockets, both close-on-exec
// (the child's end is passed explicitly, as fd 3). Without SOCK_CLOEXEC, the
// flag is set under the fork lock, so no child started meanwhile inherits
// them.
func socketpair() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return fds, err
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return fds, nil
}

// releaseExecutablePages is a no-op here: there is no /proc to find the
// executable's mappings in.
func releaseExecutablePages() (int64, error) { return 0, nil }
