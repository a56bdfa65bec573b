package quickjs

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// FuzzBuiltinSizes runs scripts that call builtins with counts, lengths and
// indices where an element count times an element size wraps on wasm32
// (sizes_grammar_test.go makes a script of any bytes), each in the real
// engine, and fails when a run ends in a trap or any other infrastructure
// outcome, or when the engine errs: a wrapped size makes QuickJS allocate a
// few bytes and write far past them, which traps when it leaves linear
// memory, or, in a build whose allocator checks red zones, when a block's
// neighbour is damaged. Every outcome a script can earn (a value, a throw,
// a limit) passes.
//
// One engine serves every input of a fuzzing process, with limits that
// keep a run to milliseconds: a memory limit of a few MiB (a wrapped size
// is small; only the write past it is large), a small CPU budget, and a
// short wall clock that terminates a run stuck in a native loop over a huge
// length, which never reaches the interrupt handler.
//
// A failure prints the script. So does
//
//	go test -run '^TestBuiltinSizesDecode$' -v ./quickjs/ -args FILE...
//
// for corpus files (absolute paths), or for the committed seeds without
// FILE. The seeds (testdata/fuzz/FuzzBuiltinSizes) are written from the
// recipes of sizesSeeds, which TestBuiltinSizesSeeds checks; a long run is
// in README.md.
func FuzzBuiltinSizes(f *testing.F) {
	st := newSizesTarget(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		script := sizesDecode(data)
		o, err := st.run(script)
		if p := sizesProblem(o, err); p != "" {
			t.Fatalf("%s\nthe script (%d bytes of fuzz input):\n%s", p, len(data), script)
		}
	})
}

// The limits of the runs of FuzzBuiltinSizes. The memory limit and the
// wall clock are these unless SIZES_MEMORY_BYTES and SIZES_WALL_CLOCK say
// otherwise: the sites whose wrapped size follows a real allocation of a
// gigabyte (a typed array of 2^29 elements, a string of 2^30-1 characters)
// are out of reach at 4 MiB; with SIZES_MEMORY_BYTES=2147483648 and
// SIZES_WALL_CLOCK=20s the keys of a typed array of 2^29 elements trap
// within seconds, and a run takes seconds.
const (
	sizesMemoryBytes = 4 << 20
	sizesWallClock   = 50 * time.Millisecond
	// sizesCPUBudget is in interrupt polls, one per 1,000 calls or backward
	// jumps: a script that loops in JavaScript stops within milliseconds.
	sizesCPUBudget = 50
	// sizesGrace is how long past its wall clock a run stuck in native
	// code goes on before the engine terminates it, and then how long the
	// engine waits for it to end before it abandons it.
	sizesGrace = 25 * time.Millisecond
)

// sizesTarget is the engine FuzzBuiltinSizes runs every input in, and the
// limits of its runs.
type sizesTarget struct {
	e           *Engine
	memoryBytes int64
	wallClock   time.Duration
}

// newSizesTarget makes the fuzz target's engine, with the limits of
// SIZES_MEMORY_BYTES and SIZES_WALL_CLOCK when they are set.
func newSizesTarget(tb testing.TB) *sizesTarget {
	tb.Helper()
	st := &sizesTarget{memoryBytes: sizesMemoryBytes, wallClock: sizesWallClock}
	if v := os.Getenv("SIZES_MEMORY_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err == nil {
			err = CheckMaxMemoryBytes(n)
		}
		if err != nil {
			tb.Fatalf("SIZES_MEMORY_BYTES=%s: %v", v, err)
		}
		st.memoryBytes = n
	}
	if v := os.Getenv("SIZES_WALL_CLOCK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			tb.Fatalf("SIZES_WALL_CLOCK=%s: not a positive duration (%v)", v, err)
		}
		st.wallClock = d
	}
	ctx := context.Background()
	e, err := New(ctx, CachedForTests(sizesOptions(st.memoryBytes)...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = e.Close(context.Background()) })
	if err := e.Warm(ctx); err != nil {
		tb.Fatal(err)
	}
	st.e = e
	return st
}

// sizesOptions is the engine of FuzzBuiltinSizes: its memory maximum is
// the run's limit, so that linear memory, and the distance a write past a
// block travels before it traps, stay small; and it terminates a stuck run
// in the process (HardKillForTests) rather than abandon it to go on using
// a core.
//
// A terminated run ends at the guest's next check, which on a busy machine
// can come later than the grace: the engine then stops waiting for it and
// calls its OnStuck hook, whose default logs an error for every such run.
// Here that is no error (the run ends on its own), so the hook is quiet.
func sizesOptions(memoryBytes int64) []Option {
	return []Option{
		WithMaxMemoryBytes(memoryBytes),
		WithCPUBudget(sizesCPUBudget),
		WithHardKill(HardKillForTests, sizesGrace),
		WithPoolSize(1),
		WithOnStuck(func(StuckRun) {}),
	}
}

func (st *sizesTarget) request(script string) spi.Request {
	return spi.Request{Script: script, InputJSON: "null",
		Limits: spi.Limits{WallClock: st.wallClock, MemoryBytes: st.memoryBytes}}
}

func (st *sizesTarget) run(script string) (spi.Outcome, error) {
	return st.e.Evaluate(context.Background(), st.request(script))
}

// sizesProblem says what is wrong with how a run ended, or "" when the
// script earned it. A trap is an infrastructure outcome (or the memory
// limit, when an allocation was refused before it: the scripts rethrow the
// out-of-memory error, so that no statement runs after one). A SyntaxError
// that escapes a script is the grammar's fault: every statement is inside
// a try block, so only a script that does not compile throws one.
func sizesProblem(o spi.Outcome, err error) string {
	if err != nil {
		return fmt.Sprintf("the engine failed: %v", err)
	}
	switch {
	case o.OK:
		return ""
	case o.Kind == spi.KindThrew && o.Name != nil && *o.Name == "SyntaxError":
		return fmt.Sprintf("the grammar wrote a script that does not compile: %s", o.Message)
	case o.Kind == spi.KindThrew:
		return ""
	case o.Kind == spi.KindLimit && (o.Limit == spi.LimitCPU || o.Limit == spi.LimitMemory || o.Limit == spi.LimitWallClock):
		return ""
	case o.Kind == spi.KindInfrastructure:
		return fmt.Sprintf("infrastructure outcome (a trap, or the engine's own failure): %s", o.Message)
	}
	return fmt.Sprintf("an outcome no script earns here: kind %q, limit %q, message %q", o.Kind, o.Limit, o.Message)
}

// The verdict fails every outcome but a value, a throw and the three
// limits a run can hit.
func TestBuiltinSizesVerdict(t *testing.T) {
	syntax, typ := "SyntaxError", "TypeError"
	for _, tc := range []struct {
		o    spi.Outcome
		err  error
		fine bool
	}{
		{o: spi.OK([]byte("1")), fine: true},
		{o: spi.Threw(&typ, "x"), fine: true},
		{o: spi.Threw(nil, "x"), fine: true},
		{o: spi.LimitHit(spi.LimitCPU), fine: true},
		{o: spi.LimitHit(spi.LimitMemory), fine: true},
		{o: spi.LimitHit(spi.LimitWallClock), fine: true},
		{o: spi.Infrastructure("quickjs: engine failed: wasm error: out of bounds memory access")},
		{o: spi.Infrastructure("quickjs: engine failed: wasm error: unreachable")},
		{o: spi.Threw(&syntax, "unexpected token")},
		{o: spi.LimitHit(spi.LimitOutput)},
		{o: spi.InputTooLarge()},
		{err: context.Canceled},
		{err: errors.New("closed")},
	} {
		if got := sizesProblem(tc.o, tc.err) == ""; got != tc.fine {
			t.Errorf("sizesProblem(%+v, %v) passes: %v, want %v", tc.o, tc.err, got, tc.fine)
		}
	}
}

// A trap in a run of the fuzz target's engine fails the target's check;
// the trap is forced by the host (its poll panics), not by a bug of
// today's engine, which is to be fixed.
func TestBuiltinSizesFailsOnATrap(t *testing.T) {
	ctx := context.Background()
	e, err := New(ctx, CachedForTests(append(sizesOptions(sizesMemoryBytes), WithPoolSize(0))...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	_ = e.rt.Close(ctx)
	e.rt = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().
		WithMemoryLimitPages(uint32(LinearMemoryBytes(e.cfg.maxMemory)/wasmPage)).
		WithCloseOnContextDone(true))
	trapping := func(ctx context.Context, mod api.Module, stack []uint64) {
		if ctx.Value(runStateKey{}) != nil {
			panic("a trap forced by the test")
		}
		poll(ctx, mod, stack)
	}
	if err := instantiateHost(ctx, e.rt, trapping); err != nil {
		t.Fatal(err)
	}
	script := sizesDecode(nil) + "for (;;) {}"
	st := &sizesTarget{e: e, memoryBytes: sizesMemoryBytes, wallClock: sizesWallClock}
	o, err := st.run(script)
	p := sizesProblem(o, err)
	if p == "" {
		t.Fatalf("a run that trapped passed the fuzz target's check: %+v", o)
	}
	t.Logf("the check reports: %s", p)
}

// TestBuiltinSizesDecode prints the script each corpus file decodes to,
// and the recipe that writes it (sizesSeeds): the files named after -args,
// or every committed seed.
func TestBuiltinSizesDecode(t *testing.T) {
	files := flag.Args()
	if len(files) == 0 {
		var err error
		if files, err = filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzBuiltinSizes", "*")); err != nil {
			t.Fatal(err)
		}
	}
	for _, file := range files {
		data, err := readCorpusBytes(file)
		if err != nil {
			t.Error(err)
			continue
		}
		g := &sizesGen{data: data}
		script := g.script()
		recipe := make([]string, len(g.trace))
		for i, c := range g.trace {
			recipe[i] = strconv.Quote(c.name)
		}
		t.Logf("%s decodes to:\n%s(its recipe: []string{%s})", file, script, strings.Join(recipe, ", "))
	}
}

// readCorpusBytes reads a corpus file of a fuzz target that takes one
// []byte, in the form go test writes.
func readCorpusBytes(file string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || lines[0] != "go test fuzz v1" {
		return nil, fmt.Errorf("%s: not a corpus file of one value (go test fuzz v1)", file)
	}
	v := strings.TrimSpace(lines[1])
	if !strings.HasPrefix(v, "[]byte(") || !strings.HasSuffix(v, ")") {
		return nil, fmt.Errorf("%s: the value is not a []byte: %s", file, v)
	}
	s, err := strconv.Unquote(v[len("[]byte(") : len(v)-1])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return []byte(s), nil
}

// corpusFile is data in the form go test writes a corpus file.
func corpusFile(data []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data)
}
