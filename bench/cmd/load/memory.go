package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"
)

// The memory phase (see the command's doc): a fresh server's tree after
// start-up, idle, and under evaluations.

func (b *bench) memoryPhase() error {
	for _, t := range b.targets {
		if err := b.memoryRun(t); err != nil {
			return fmt.Errorf("%s%v", t.tag(), err)
		}
	}
	return nil
}

func (b *bench) memoryRun(t *target) error {
	c := newClient(1)
	var env []string
	if _, err := os.Stat(b.cacheDir(t)); err == nil {
		env = append(env, "COMPILATION_CACHE_DIR="+b.cacheDir(t))
		t.sum.MemoryWithCache = true
	}
	s, err := b.start(t, "memory", env...)
	if err != nil {
		return err
	}
	defer b.stop(s)
	if err := s.WaitReady(c); err != nil {
		return err
	}
	time.Sleep(time.Second)
	m := &MemoryRun{Evaluations: scaled(*memEvals), IdleEvals: *idleEvals}
	pid := s.Cmd.Process.Pid
	m.RSSIdleKiB, m.HWMIdleKiB, _ = procStatus(pid)
	m.Start = procTree(pid)
	reqs := []request{{"/v1/evaluations", b.bodies["echo"]}, {"/v1/evaluations", b.bodies["reshape-16KiB"]}}
	for i := 1; i <= m.IdleEvals; i++ {
		if _, err := do(c, s.Base+"/v1/evaluations", reqs[i%2]); err != nil {
			return fmt.Errorf("memory phase, before idle: %v", err)
		}
	}
	m.Idle = settledTree(pid)
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	every := max(1, m.Evaluations/10)
	for i := 1; i <= m.Evaluations; i++ {
		if ctx.Err() != nil {
			return fmt.Errorf("memory phase: out of time after %d evaluations", i-1)
		}
		if _, err := do(c, s.Base+"/v1/evaluations", reqs[i%2]); err != nil {
			m.Errors++
			if m.Errors > 10 {
				return fmt.Errorf("memory phase: %v", err)
			}
		}
		if i%every == 0 {
			rss, hwm, _ := procStatus(pid)
			tr := procTree(pid)
			m.Samples = append(m.Samples, MemPoint{After: i, RSSKiB: rss, HWMKiB: hwm,
				Procs: len(tr.Procs), TreeRSSKiB: tr.RSSKiB, TreePSSKiB: tr.PSSKiB, TreeHWMKiB: tr.HWMKiB})
		}
	}
	m.Seconds = round3(time.Since(t0).Seconds())
	m.End = procTree(pid)
	t.sum.Memory = m
	log.Printf("%smemory: idle %d KiB RSS, %d KiB PSS over %d processes; %v", t.tag(), m.Idle.RSSKiB, m.Idle.PSSKiB, len(m.Idle.Procs), m.Samples)
	return nil
}
