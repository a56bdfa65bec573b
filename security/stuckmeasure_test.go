package security

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// stuckEnough is how long a stuck case's guest must stay inside native code
// from its start in TestMeasureStuckCases: the battery's longest wall clock
// plus the children's grace, five times over, so that it is still stuck on
// a machine five times faster than the one that measured it.
const stuckEnough = 5 * (maxStuckWall + childGrace)

// measured is what one stuck case did in a process of its own.
type measured struct {
	Ended    bool   `json:"ended"` // ended by itself: not stuck
	Outcome  string `json:"outcome,omitempty"`
	Returned int64  `json:"returnedMs,omitempty"` // when its guest returned, after the start
}

// TestMeasureStuckCases measures how long each stuck case and family stays
// inside native code past its deadline, each alone in a process of its own
// (two at a time), on the engine of this build: the figures the comments
// of stuckFamilies quote. Opt-in, since it takes minutes and burns both
// cores:
//
//	SANDBOX_MEASURE_STUCK=30s go test ./security -run TestMeasureStuckCases -v
//
// runs each case for at most 30 s and fails for a case that ends by itself
// or whose guest returns before stuckEnough. SANDBOX_MEASURE_MATCH, a
// regular expression, measures only the cases whose names it matches.
func TestMeasureStuckCases(t *testing.T) {
	if i := os.Getenv("SANDBOX_STUCK_CASE"); i != "" {
		measureStuckCase(t, i)
		return
	}
	limit, err := time.ParseDuration(os.Getenv("SANDBOX_MEASURE_STUCK"))
	if err != nil {
		t.Skip("set SANDBOX_MEASURE_STUCK to the longest a case may run, e.g. 30s")
	}
	match, err := regexp.Compile(os.Getenv("SANDBOX_MEASURE_MATCH"))
	if err != nil {
		t.Fatalf("SANDBOX_MEASURE_MATCH: %v", err)
	}
	all := allStuckCases()
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, c := range all {
		if !match.MatchString(c.name) {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			line := runStuckCase(t, i, limit)
			mu.Lock()
			t.Logf("%-100.100s %s", c.name, line)
			mu.Unlock()
		}()
	}
	wg.Wait()
}

// runStuckCase runs case i in a child and reports how it went, failing the
// test when it is not stuck long enough.
func runStuckCase(t *testing.T, i int, limit time.Duration) string {
	cmd := exec.Command(os.Args[0], "-test.run=^TestMeasureStuckCases$")
	cmd.Env = append(os.Environ(), "SANDBOX_STUCK_CASE="+strconv.Itoa(i))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan measured, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var m measured
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
				return
			}
		}
	}()
	name := allStuckCases()[i].name
	select {
	case m := <-lines:
		if m.Ended {
			t.Errorf("%s: not stuck: it ended by itself (%s)", name, m.Outcome)
			return "ended by itself: " + m.Outcome
		}
		took := time.Duration(m.Returned) * time.Millisecond
		if took < stuckEnough {
			t.Errorf("%s: its guest returned after %v, before %v", name, took, stuckEnough)
		}
		return fmt.Sprintf("returned after %.1f s", took.Seconds())
	case <-time.After(limit):
		return fmt.Sprintf("still inside native code after %v", limit)
	}
}

// measureStuckCase is the child: it runs one case with the battery's
// longest wall clock, so that even on a busy machine the script reaches its
// native call before its deadline, and prints when its guest returns.
func measureStuckCase(t *testing.T, i string) {
	n, err := strconv.Atoi(i)
	if err != nil {
		t.Fatal(err)
	}
	c := allStuckCases()[n]
	ctx := context.Background()
	e, err := quickjs.New(ctx, quickjs.WithPoolSize(0), quickjs.WithMaxMemoryBytes(256<<20),
		quickjs.WithHardKill(quickjs.HardKillWatchdog, 10*time.Millisecond), quickjs.WithOnStuck(func(quickjs.StuckRun) {}))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	memory := c.memory
	if memory == 0 {
		memory = serviceLimits.DefaultMemoryBytes
	}
	start := time.Now()
	out, err := e.Evaluate(ctx, spi.Request{Script: c.script, InputJSON: "null", Limits: spi.Limits{WallClock: maxStuckWall, MemoryBytes: memory}})
	var m measured
	if e.StuckRuns() == 0 {
		m = measured{Ended: true, Outcome: fmt.Sprintf("%+v %v after %v", out, err, time.Since(start))}
	} else {
		for e.StuckRuns() > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		m.Returned = time.Since(start).Milliseconds()
	}
	b, _ := json.Marshal(m)
	fmt.Println(string(b))
	os.Exit(0)
}
