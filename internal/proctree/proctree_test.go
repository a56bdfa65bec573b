package proctree

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"
)

// A child and its own child show up under the test's process with their
// figures; a process that is gone is an error.
func TestTree(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads Linux's /proc")
	}
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	var procs []Proc
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		procs, err = Tree(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if len(procs) >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // sh has not forked sleep yet
	}
	if len(procs) < 3 {
		t.Fatalf("tree of the test: %+v, want the test, sh and sleep", procs)
	}
	if procs[0].Pid != os.Getpid() {
		t.Errorf("root first: got pid %d", procs[0].Pid)
	}
	pids := make([]int, len(procs))
	for i, p := range procs {
		pids[i] = p.Pid
		if p.RSSKiB <= 0 || p.Threads <= 0 || p.FDs <= 0 {
			t.Errorf("pid %d: %+v, want its RSS, threads and descriptors", p.Pid, p)
		}
	}
	if !slices.Contains(pids, cmd.Process.Pid) {
		t.Errorf("tree %v lacks the child %d", pids, cmd.Process.Pid)
	}
	for _, p := range procs {
		if p.Pid == cmd.Process.Pid && !slices.Equal(p.Args, []string{"sh", "-c", "sleep 30 & wait"}) {
			t.Errorf("the child's command line: %q", p.Args)
		}
	}
	if procs[0].PSSKiB <= 0 {
		t.Errorf("the test's PSS: %d", procs[0].PSSKiB)
	}

	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, err := Read(cmd.Process.Pid); err == nil {
		t.Errorf("Read of a reaped process succeeded")
	}
}

func TestFields(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "status")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("Name:\tx\nVmRSS:\t  1234 kB\nThreads:\t7\nbad line\nEmpty:\n")
	f.Close()
	got, err := Fields(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if got["VmRSS"] != 1234 || got["Threads"] != 7 || len(got) != 2 {
		t.Errorf("Fields: %v", got)
	}
	if _, err := Fields(f.Name() + ".missing"); err == nil {
		t.Error("a missing file read without an error")
	}
}
