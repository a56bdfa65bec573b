// Package proctree reads a process and its descendants from Linux's /proc:
// the figures the benchmarks report and the reliability soak checks for the
// server and its worker processes. Elsewhere every read fails.
package proctree

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Proc is one process's figures.
type Proc struct {
	Pid int
	// Args is the command line, the program first.
	Args []string
	// VmRSS, VmHWM and Threads from /proc/PID/status.
	RSSKiB, HWMKiB, Threads int64
	// Pss, Pss_Anon and Pss_File from /proc/PID/smaps_rollup (0 when it
	// cannot be read). RSS counts every resident page the process maps, so
	// the binary's text, shared by the server and its workers, counts once
	// per process; PSS divides each shared page among the processes that
	// map it.
	PSSKiB, PSSAnonKiB, PSSFileKiB int64
	// FDs is the number of open file descriptors.
	FDs int
}

// Read reads one process.
func Read(pid int) (Proc, error) {
	p := Proc{Pid: pid}
	st, err := Fields(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return p, err
	}
	p.RSSKiB, p.HWMKiB, p.Threads = st["VmRSS"], st["VmHWM"], st["Threads"]
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return p, err
	}
	p.FDs = len(ents)
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
		for _, a := range bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0}) {
			p.Args = append(p.Args, string(a))
		}
	}
	if f, err := Fields(fmt.Sprintf("/proc/%d/smaps_rollup", pid)); err == nil {
		p.PSSKiB, p.PSSAnonKiB, p.PSSFileKiB = f["Pss"], f["Pss_Anon"], f["Pss_File"]
	}
	return p, nil
}

// Tree reads root and its descendants, root first. A descendant that exits
// while it is read is left out; the error is root's.
func Tree(root int) ([]Proc, error) {
	r, err := Read(root)
	if err != nil {
		return nil, err
	}
	out := []Proc{r}
	for _, pid := range Descendants(root) {
		if p, err := Read(pid); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// Descendants lists pid's children, recursively, from
// /proc/PID/task/TID/children (a child belongs to the thread that forked
// it, so every thread's list is read).
func Descendants(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	all := slices.Clone(out)
	for _, c := range out {
		all = append(all, Descendants(c)...)
	}
	return all
}

// Fields reads a /proc file of "Key:   value kB" lines (status,
// smaps_rollup) into the first number of each key's value.
func Fields(path string) (map[string]int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if f := strings.Fields(v); len(f) > 0 {
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out, nil
}
