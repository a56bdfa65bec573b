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
