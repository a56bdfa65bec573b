package worker

import (
	"fmt"
	"os"
	"strconv"
	"strings"
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

// releaseExecutablePages drops this process's resident pages of its own
// executable's read-only segments (code, read-only data, the symbol
// tables). Start-up touches far more of them than a run does: the
// initialisation of every package the binary links (the server's HTTP,
// storage and telemetry libraries included) and the engine's compilation.
// The pages are clean copies of the file and stay in the page cache, shared
// with the server, so a run that needs one again maps it back from there;
// what the worker's resident set then counts is what its runs use. A
// mapping with any privately written page is left alone (dropping it would
// lose the writes). It returns the bytes released.
func releaseExecutablePages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	var released int64
	for _, m := range executableMappings(smaps, exe) {
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED); e != 0 {
			return released, fmt.Errorf("madvise %#x-%#x: %w", m.start, m.end, e)
		}
		released += m.rss
	}
	return released, nil
}

type mapping struct {
	start, end uintptr
	rss        int64 // resident bytes
}

// executableMappings parses /proc/self/smaps for the read-only, private,
// never-written mappings of the file exe.
func executableMappings(smaps []byte, exe string) []mapping {
	var out []mapping
	var cur *mapping
	clean := false
	flush := func() {
		if cur != nil && clean {
			out = append(out, *cur)
		}
		cur = nil
	}
	for line := range strings.Lines(string(smaps)) {
		line = strings.TrimRight(line, "\n")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if strings.Contains(f[0], "-") && len(f) >= 5 {
			flush()
			perms := f[1]
			if len(f) < 6 || f[5] != exe || len(perms) != 4 || perms[1] == 'w' || perms[3] != 'p' {
				continue
			}
			lo, hi, ok := strings.Cut(f[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if !ok || err1 != nil || err2 != nil {
				continue
			}
			cur, clean = &mapping{start: uintptr(start), end: uintptr(end)}, true
			continue
		}
		if cur == nil || len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Rss:":
			cur.rss = kb << 10
		case "Private_Dirty:", "Shared_Dirty:", "Anonymous:", "Swap:":
			if kb != 0 {
				clean = false
			}
		}
	}
	flush()
	return out
}
