package main

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"time"
)

// The cold phase (see the command's doc): process start to the first
// successful evaluation, with and without the compilation cache.

func (b *bench) coldPhase() error {
	for _, t := range b.targets {
		dir := b.cacheDir(t)
		start := time.Now()
		out, err := exec.Command(t.bin, "compile-cache", dir).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%scompile-cache: %v: %s", t.tag(), err, out)
		}
		t.sum.CompileCacheMs = round3(float64(time.Since(start).Microseconds()) / 1000)
	}
	c := newClient(1)
	nt := len(b.targets)
	for i := 0; i < 2**coldRuns; i++ {
		cache := i%2 == 0
		for j := 0; j < nt; j++ {
			t := b.targets[(j+i/2)%nt] // the binary that goes first alternates
			env := []string{}
			if cache {
				env = append(env, "COMPILATION_CACHE_DIR="+b.cacheDir(t))
			}
			run, err := b.coldStart(t, c, cache, env)
			if err != nil {
				return err
			}
			t.sum.Cold = append(t.sum.Cold, run)
			log.Printf("%scold start %d (cache %v): first evaluation after %.1f ms, listening after %.1f ms, idle RSS %d KiB (server), %d KiB RSS / %d KiB PSS (%d processes)",
				t.tag(), i/2+1, cache, run.FirstEvalMs, run.ListenMs, run.RSSIdleKiB, run.Tree.RSSKiB, run.Tree.PSSKiB, len(run.Tree.Procs))
			c.CloseIdleConnections()
		}
	}
	return nil
}

// coldStart starts a server and sends the echo evaluation until one succeeds.
func (b *bench) coldStart(t *target, c *http.Client, cache bool, env []string) (ColdRun, error) {
	run := ColdRun{Cache: cache}
	s, err := b.start(t, "cold", env...)
	if err != nil {
		return run, err
	}
	defer b.stop(s)
	r := request{"/v1/evaluations", b.bodies["echo"]}
	deadline := s.Started.Add(30 * time.Second)
	// the port accepts connections (the listener is open)
	for {
		if time.Now().After(deadline) {
			return run, fmt.Errorf("not listening within 30 s; see %s", s.LogPath)
		}
		conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			run.ListenMs = round3(float64(time.Since(s.Started).Microseconds()) / 1000)
			conn.Close()
			break
		}
		select {
		case <-s.Exited():
			return run, fmt.Errorf("the server exited; see %s", s.LogPath)
		default:
		}
		time.Sleep(500 * time.Microsecond)
	}
	// the first successful evaluation (the request waits for compilation)
	for {
		if time.Now().After(deadline) {
			return run, fmt.Errorf("no successful evaluation within 30 s; see %s", s.LogPath)
		}
		run.Attempts++
		if _, err := do(c, s.Base+r.path, r); err == nil {
			run.FirstEvalMs = round3(float64(time.Since(s.Started).Microseconds()) / 1000)
			break
		}
		select {
		case <-s.Exited():
			return run, fmt.Errorf("the server exited; see %s", s.LogPath)
		default:
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Second) // the pool refills
	run.RSSIdleKiB, _, _ = procStatus(s.Cmd.Process.Pid)
	run.Tree = procTree(s.Cmd.Process.Pid)
	lines, _, _ := readLog(s.LogPath, 0)
	for _, l := range lines {
		if l.Message == "engine warm" {
			if d, err := time.ParseDuration(l.Took); err == nil {
				run.WarmLoggedMs = round3(float64(d.Microseconds()) / 1000)
			}
		}
	}
	return run, nil
}

// cacheDir is the compilation cache the cold phase bakes with t's binary;
// the memory phase uses it too (the image's configuration, Dockerfile).
func (b *bench) cacheDir(t *target) string {
	return filepath.Join(b.tmp, fmt.Sprintf("wazero-cache-%d", t.index))
}
