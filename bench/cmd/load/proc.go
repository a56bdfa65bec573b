package main

import (
	"fmt"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/internal/proctree"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

// procTree reads the memory of pid and of its descendants. A process that
// exits while it is read is left out.
func procTree(pid int) *TreeMem {
	t := &TreeMem{}
	procs, _ := proctree.Tree(pid)
	for i, p := range procs {
		m := ProcMem{Pid: p.Pid, RSSKiB: p.RSSKiB, HWMKiB: p.HWMKiB,
			PSSKiB: p.PSSKiB, PSSAnonKiB: p.PSSAnonKiB, PSSFileKiB: p.PSSFileKiB}
		switch {
		case i == 0:
			m.Role = "server"
		case len(p.Args) > 1 && p.Args[1] == worker.Verb:
			m.Role = "worker"
		case len(p.Args) > 1:
			m.Role = p.Args[1]
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
	f, err := proctree.Fields(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	return f["VmRSS"], f["VmHWM"], nil
}
