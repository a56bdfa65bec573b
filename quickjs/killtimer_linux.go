package quickjs

import (
	"fmt"
	"syscall"
	"time"
	"unsafe"
)

// killTimer is a POSIX per-process timer whose expiry delivers SIGKILL. The
// kernel delivers it whatever the Go runtime is doing: a guest stuck inside
// one long native builtin never returns to Go, and while it runs the Go
// scheduler cannot preempt it, so a garbage collection that starts meanwhile
// can stall every other goroutine, including any watchdog written in Go.
type killTimer struct{ id int32 }

// Linux x86-64 and arm64 share these numbers' layout; the syscall numbers
// come from the syscall package.
type sigevent struct {
	value  uintptr
	signo  int32
	notify int32 // SIGEV_SIGNAL = 0
	_      [48]byte
}

type itimerspec struct{ interval, value syscall.Timespec }

const clockMonotonic = 1

func newKillTimer() (*killTimer, error) {
	ev := sigevent{signo: int32(syscall.SIGKILL)}
	var id int32
	if _, _, e := syscall.RawSyscall(syscall.SYS_TIMER_CREATE, clockMonotonic,
		uintptr(unsafe.Pointer(&ev)), uintptr(unsafe.Pointer(&id))); e != 0 {
		return nil, fmt.Errorf("quickjs: timer_create: %w", e)
	}
	return &killTimer{id: id}, nil
}

func (k *killTimer) set(d time.Duration) error {
	spec := itimerspec{value: syscall.NsecToTimespec(int64(d))}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_TIMER_SETTIME, uintptr(k.id), 0,
		uintptr(unsafe.Pointer(&spec)), 0, 0, 0); e != 0 {
		return fmt.Errorf("quickjs: timer_settime: %w", e)
	}
	return nil
}

// arm makes the kernel kill the process after d unless disarmed first.
func (k *killTimer) arm(d time.Duration) error {
	if d <= 0 {
		d = time.Nanosecond
	}
	return k.set(d)
}

// release disarms and deletes the timer.
func (k *killTimer) release() {
	_ = k.set(0)
	_, _, _ = syscall.RawSyscall(syscall.SYS_TIMER_DELETE, uintptr(k.id), 0, 0)
}

const processKillSupported = true
