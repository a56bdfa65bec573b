package quickjs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBuiltinSizesCampaign is FuzzBuiltinSizes for a long run that goes on
// past a failure, to list every site that traps: go test -fuzz stops at
// the first failing input, and finds the commonest site again within
// seconds of each restart. Set SIZES_CAMPAIGN to a duration (and, for the
// sites that need a large allocation first, SIZES_MEMORY_BYTES and
// SIZES_WALL_CLOCK, as for the fuzz target); it runs
// scripts of random bytes and mutations of the committed seeds, in the
// fuzz target's engine under its check, one worker per processor, and for
// each distinct failure (a trap's innermost guest frames, or the check's
// message) keeps the first input, shrunk to the fewest bytes that fail the
// same way. With SIZES_CAMPAIGN_OUT set it writes each to that directory:
// a corpus file, and beside it NAME.txt with the script, the guest stack
// and how often it was hit. It fails when it found any. The frames are
// function indices of the embedded engine, whose names are stripped: the
// script says which builtin, and a build of the same sources that keeps
// its name section names the function.
//
//	SIZES_CAMPAIGN=30m SIZES_CAMPAIGN_OUT=/tmp/found go test -run '^TestBuiltinSizesCampaign$' -v -timeout 0 ./quickjs/
func TestBuiltinSizesCampaign(t *testing.T) {
	spec := os.Getenv("SIZES_CAMPAIGN")
	if spec == "" {
		t.Skip("SIZES_CAMPAIGN (a duration) runs it")
	}
	length, err := time.ParseDuration(spec)
	if err != nil {
		t.Fatalf("SIZES_CAMPAIGN=%q: %v", spec, err)
	}
	out := os.Getenv("SIZES_CAMPAIGN_OUT")
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzBuiltinSizes", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var seeds [][]byte
	for _, f := range files {
		data, err := readCorpusBytes(f)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, data)
	}

	c := &campaign{st: newSizesTarget(t), out: out, start: time.Now(), found: map[string]*campaignFind{}}
	deadline := c.start.Add(length)
	workers := runtime.GOMAXPROCS(0)
	seed := uint64(time.Now().UnixNano())
	t.Logf("campaign of %v with %d workers, random seed %d, memory limit %d, wall clock %v",
		length, workers, seed, c.st.memoryBytes, c.st.wallClock)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := mathrand.New(mathrand.NewPCG(seed, uint64(w)))
			for time.Now().Before(deadline) {
				c.try(t, campaignInput(rnd, seeds))
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-tick.C:
			t.Log(c.progress())
		}
	}
	t.Log(c.progress())
	finds := c.sorted()
	for _, f := range finds {
		t.Errorf("%s (%d hits, first after %v)%s:\n%s", f.problem, f.hits, f.after.Round(time.Second), f.where(), f.script)
	}
}

// campaignInput is random bytes, or a committed seed with a few bytes
// changed, inserted or dropped.
func campaignInput(rnd *mathrand.Rand, seeds [][]byte) []byte {
	if len(seeds) == 0 || rnd.IntN(2) == 0 {
		b := make([]byte, 1+rnd.IntN(64))
		for i := range b {
			b[i] = byte(rnd.Uint32())
		}
		return b
	}
	b := slices.Clone(seeds[rnd.IntN(len(seeds))])
	for range 1 + rnd.IntN(4) {
		switch i := rnd.IntN(len(b) + 1); {
		case i == len(b) || rnd.IntN(4) == 0:
			b = slices.Insert(b, min(i, len(b)), byte(rnd.Uint32()))
		case rnd.IntN(4) == 0:
			b = slices.Delete(b, i, i+1)
		default:
			b[i] = byte(rnd.Uint32())
		}
	}
	return b
}

// campaign is the state of a TestBuiltinSizesCampaign, shared by its
// workers.
type campaign struct {
	st    *sizesTarget
	out   string
	start time.Time

	mu    sync.Mutex
	execs int
	found map[string]*campaignFind // by signature
}

// campaignFind is one distinct failure and its first input.
type campaignFind struct {
	signature, problem, stack, script, file string
	data                                    []byte
	hits                                    int
	after                                   time.Duration
}

func (f *campaignFind) where() string {
	if f.file == "" {
		return ""
	}
	return " in " + f.file
}

// try runs one input; a failure not seen before is shrunk and kept.
func (c *campaign) try(t *testing.T, data []byte) {
	problem, sig, stack := c.run(data)
	c.mu.Lock()
	c.execs++
	if problem == "" {
		c.mu.Unlock()
		return
	}
	if f, ok := c.found[sig]; ok {
		f.hits++
		c.mu.Unlock()
		return
	}
	f := &campaignFind{signature: sig, hits: 1, after: time.Since(c.start)}
	c.found[sig] = f
	c.mu.Unlock()

	data = c.shrink(data, sig)
	problem, _, stack = c.run(data)
	script := sizesDecode(data)
	c.mu.Lock()
	f.problem, f.stack, f.script, f.data = problem, stack, script, data
	c.mu.Unlock()
	if c.out != "" {
		sum := sha256.Sum256([]byte(sig))
		name := "sizes-" + hex.EncodeToString(sum[:8])
		f.file = filepath.Join(c.out, name)
		note := fmt.Sprintf("%s\n\nfirst found after %v of the campaign\n\nscript:\n%s\nguest stack at the trap (innermost first):\n%s\n",
			problem, f.after.Round(time.Second), script, stack)
		if err := os.WriteFile(f.file, corpusFile(data), 0o644); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(f.file+".txt", []byte(note), 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Logf("after %v: %s\n%s", f.after.Round(time.Second), problem, script)
}

// run runs one input through the fuzz target's check; for a failure it
// returns what the check says, the failure's signature, and the guest's
// stack when it trapped.
func (c *campaign) run(data []byte) (problem, signature, stack string) {
	script := sizesDecode(data)
	o, err := c.st.run(script)
	if problem = sizesProblem(o, err); problem == "" {
		return "", "", ""
	}
	frames := c.trapFrames(script)
	if len(frames) == 0 {
		return problem, problem, ""
	}
	// the innermost frames name the site and the builtin that reached it;
	// the outer ones are the interpreter's, and differ with the shape of
	// the script around it
	return problem, strings.Join(frames[:min(len(frames), 3)], " < "), strings.Join(frames, "\n")
}

// trapFrames runs the script again in a fresh instance, outside the
// engine's outcome, whose error keeps only its first line, and returns the
// guest's stack when it traps, innermost frame first.
func (c *campaign) trapFrames(script string) []string {
	ctx := context.Background()
	e := c.st.e
	in, err := newInstance(ctx, e.rt, e.compiled, e.mem, e.image)
	if err != nil {
		return nil
	}
	defer in.close()
	rs := &runState{deadline: time.Now().Add(c.st.wallClock)}
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, runStateKey{}, rs), c.st.wallClock+sizesGrace)
	defer cancel()
	_, err = in.exec(ctx, script, "null", c.st.memoryBytes, sizesCPUBudget, false, 1)
	if err == nil {
		return nil
	}
	_, trace, ok := strings.Cut(err.Error(), "wasm stack trace:")
	if !ok {
		return nil
	}
	var frames []string
	for _, l := range strings.Split(trace, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			frames = append(frames, l)
		}
	}
	return frames
}

// shrink returns data with as many bytes dropped, and as many of the rest
// set to zero (the first alternative of their choice), as leave it failing
// with signature sig: a script of fewer statements and simpler receivers.
func (c *campaign) shrink(data []byte, sig string) []byte {
	same := func(d []byte) bool {
		_, s, _ := c.run(d)
		return s == sig
	}
	for n := len(data) - 1; n >= 0; n-- {
		if !same(data[:n]) {
			break
		}
		data = data[:n]
	}
	for _, span := range []int{16, 8, 4, 2, 1} {
		for i := 0; i+span <= len(data); {
			if try := slices.Delete(slices.Clone(data), i, i+span); same(try) {
				data = try
				continue
			}
			i++
		}
	}
	for i := range data {
		if data[i] == 0 {
			continue
		}
		try := slices.Clone(data)
		try[i] = 0
		if same(try) {
			data = try
		}
	}
	return data
}

func (c *campaign) progress() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	took := time.Since(c.start)
	return fmt.Sprintf("after %v: %d executions (%.0f/s), %d distinct failures",
		took.Round(time.Second), c.execs, float64(c.execs)/took.Seconds(), len(c.found))
}

func (c *campaign) sorted() []*campaignFind {
	c.mu.Lock()
	defer c.mu.Unlock()
	var finds []*campaignFind
	for _, f := range c.found {
		finds = append(finds, f)
	}
	slices.SortFunc(finds, func(a, b *campaignFind) int { return int(a.after - b.after) })
	return finds
}
