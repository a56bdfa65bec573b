//go:build linux && amd64

package lockdown_test

import "golang.org/x/sys/unix"

// archProbes are the legacy calls that only amd64 has. fork and vfork are
// not run without the filter: they would duplicate the child.
func archProbes() []probe {
	return []probe{
		{name: "fork", run: func() error { return errno(sys(unix.SYS_FORK)) }, control: "skip"},
		{name: "vfork", run: func() error { return errno(sys(unix.SYS_VFORK)) }, control: "skip"},
		{name: "open", run: func() error { return closing(sys(unix.SYS_OPEN, ptr("/etc/hostname"), unix.O_RDONLY)) }},
		{name: "creat", run: func() error { return closing(sys(unix.SYS_CREAT, ptr(missing+"/x"), 0o600)) }},
		{name: "mkdir (legacy)", run: func() error { return errno(sys(unix.SYS_MKDIR, ptr(missing+"/x"), 0o700)) }},
	}
}
