package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// descendants lists pid's children, recursively, from
// /proc/PID/task/TID/children (a child belongs to the thread that forked
// it, so every thread's list is read).
func descendants(pid int) []int {
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
		all = append(all, descendants(c)...)
	}
	return all
}

// procTree reads the memory of pid and of its descendants. A process that
// exits while it is read is left out.
func procTree(pid int) *TreeMem {
	t := &TreeMem{}
	for i, p := range append([]int{pid}, descendants(pid)...) {
		m, err := procMem(p)
		if err != nil {
			continue
		}
		if i == 0 {
			m.Role = "server"
		}
		t.Procs = append(t.Procs, m)
		t.RSSKiB += m.RSSKiB
		t.HWMKiB += m.HWMKiB
		t.PSSKiB += m.PSSKiB
		t.PSSAnonKiB += m.PSSAnonKiB
		t.PSSFileKiB += m.PSSFileKiB
	}
	return t
}

func procMem(pid int) (ProcMem, error) {
	m := ProcMem{Pid: pid}
	var err error
	m.RSSKiB, m.HWMKiB, err = procStatus(pid)
	if err != nil {
		return m, err
	}
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
		args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
		if len(args) > 1 {
			m.Role = string(args[1])
		}
		if m.Role == "__sandbox-worker" {
			m.Role = "worker"
		}
	}
	if f, err := procFields(fmt.Sprintf("/proc/%d/smaps_rollup", pid)); err == nil {
		m.PSSKiB, m.PSSAnonKiB, m.PSSFileKiB = f["Pss"], f["Pss_Anon"], f["Pss_File"]
	}
	return m, nil
}

// procFields reads a /proc file of "Key:   value kB" lines (status,
// smaps_rollup) into the first number of each key's value.
func procFields(path string) (map[string]int64, error) {
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

// settledTree waits until the tree has settled (the same processes, and a
// total RSS that moved by less than 256 KiB over half a second, at most
// 10 s), then returns it.
func settledTree(pid int) *TreeMem {
	prev := procTree(pid)
	for try := 0; try < 20; try++ {
		time.Sleep(500 * time.Millisecond)
		cur := procTree(pid)
		if len(cur.Procs) == len(prev.Procs) && abs64(cur.RSSKiB-prev.RSSKiB) < 256 {
			return cur
		}
		prev = cur
	}
	return prev
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// procStatus reads VmRSS and VmHWM (KiB) of a process.
func procStatus(pid int) (rss, hwm int64, err error) {
	f, err := procFields(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	return f["VmRSS"], f["VmHWM"], nil
}
