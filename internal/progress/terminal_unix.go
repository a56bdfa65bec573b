//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package progress

import "golang.org/x/sys/unix"

// terminalColumns asks the file descriptor for its window's size, which
// only a terminal answers.
func terminalColumns(fd uintptr) (int, bool) {
	ws, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
	if err != nil {
		return 0, false
	}
	return int(ws.Col), true
}
