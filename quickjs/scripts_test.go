package quickjs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"
)

// runCtx is a context for a guest call of a run with a deadline far off.
func runCtx() context.Context {
	return context.WithValue(context.Background(), runStateKey{}, &runState{deadline: time.Now().Add(time.Minute)})
}

// memoryOf is in's linear memory, copied: its first n bytes, and whether
// every byte above them is zero.
func memoryOf(t *testing.T, in *instance, n uint32) (mem []byte, zerosAbove bool) {
	t.Helper()
	all, ok := in.mem.Read(0, in.mem.Size())
	if !ok || uint32(len(all)) < n {
		t.Fatalf("a memory of %d bytes, want at least %d", len(all), n)
	}
	return bytes.Clone(all[:n]), isZero(all[n:])
}

// digest is what a script image holds: its size, and its spans' places and
// bytes.
func digest(s *scriptImage) [sha256.Size]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%d;", s.size)
	for _, sp := range s.spans {
		fmt.Fprintf(h, "%d+%d;", sp.off, sp.n)
		h.Write(sp.data)
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// compiled compiles script in a new instance of e as a run does: the
// compile, the script image taken, the dead stack cleared. It returns the
// instance, ready to run the script, and the image.
func compiled(t *testing.T, e *Engine, script string) (*instance, *scriptImage) {
	t.Helper()
	in := e.testInstance(t)
	if _, err := in.compileScript(context.Background(), script, e.cfg.maxMemory); err != nil {
		t.Fatal(err)
	}
	img, err := e.image.captureScript(in)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		img.refs = 1
		(&scriptCache{}).drop(img)
	})
	mem, _ := in.mem.Read(0, e.image.stack)
	e.image.clearStack(mem)
	return in, img
}

// Every run of a script starts from the same bytes, the script image: the
// run that compiled it, in the instance it compiled in, and every later run,
// in an instance that served other runs since, reset and given the image;
// the runs, which change the realm every way they can, never change the
// image; and the same script compiled again, in another engine, at another
// time, is the same image, byte for byte. The test fails if a restore or a
// reset is skipped or partial, or if a run writes the image.
func TestRunStartsFromTheScriptImage(t *testing.T) {
	const script = `
	  function helper(x) { return { x, at: Date.now(), r: Math.random() } }
	  const seen = [globalThis.mark, Object.prototype.polluted, Array.prototype.at.name];
	  globalThis.mark = input;
	  Object.prototype.polluted = input;
	  Array.prototype.at = () => input;
	  const keep = [];
	  for (let i = 0; i < 2000; i++) keep.push("x".repeat(i % 50) + input);
	  [seen, helper(keep.length)]`
	e := testEngine(t, DefaultMaxMemoryBytes)
	first, img := compiled(t, e, script)
	want, zeros := memoryOf(t, first, img.size)
	if !zeros {
		t.Fatal("the instance that compiled holds bytes above its script image")
	}
	held := digest(img)

	// another engine, a second later: the same compile, the same image
	time.Sleep(1100 * time.Millisecond)
	other := testEngine(t, DefaultMaxMemoryBytes)
	_, again := compiled(t, other, script)
	if digest(again) != held {
		t.Fatal("the same script compiled again is another image")
	}

	// one instance, reset after every run, the image restored for each
	in := e.testInstance(t)
	if _, err := in.exec(runCtx(), `globalThis.mark = "x".repeat(1 << 20); 1`, "null", 64<<20, 0, false, 7); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if !e.image.reset(in) {
			t.Fatal("the instance could not be reset")
		}
		if err := img.restore(in); err != nil {
			t.Fatal(err)
		}
		got, zeros := memoryOf(t, in, img.size)
		if !zeros || !bytes.Equal(got, want) {
			t.Fatalf("run %d: the memory it starts from is not the run that compiled's (zeros above: %v)", i, zeros)
		}
		raw, err := in.runCompiled(runCtx(), fmt.Sprintf(`"run %d"`, i), 64<<20, 0, false, uint64(i+1))
		if err != nil || raw.status != statusOK || !strings.HasPrefix(string(raw.result), `[[null,null,"at"],{"x":2000,`) {
			t.Fatalf("run %d: status %d %s, %v: it saw an earlier run", i, raw.status, raw.result, err)
		}
		if digest(img) != held {
			t.Fatalf("run %d changed the script image", i)
		}
	}
	// the run that compiled, as its later ones
	raw, err := first.runCompiled(runCtx(), `"first"`, 64<<20, 0, false, 9)
	if err != nil || raw.status != statusOK || !strings.HasPrefix(string(raw.result), `[[null,null,"at"],{"x":2000,`) {
		t.Fatalf("the run that compiled: status %d %s, %v", raw.status, raw.result, err)
	}
}

// The cache keeps images within its budget, the least recently used
// leaving first, and counts what it did; an image is freed once evicted
// and no restore holds it, and not before.
func TestScriptCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	e := testEngine(t, DefaultMaxMemoryBytes)
	var imgs []*scriptImage
	for i := range 6 {
		in := e.testInstance(t)
		if _, err := in.compileScript(context.Background(), fmt.Sprintf("const v%d = %d; v%[1]d", i, i), e.cfg.maxMemory); err != nil {
			t.Fatal(err)
		}
		img, err := e.image.captureScript(in)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	size := imgs[0].bytes()
	for _, img := range imgs {
		size = max(size, img.bytes())
	}
	c := newScriptCache(4*size + size/2) // room for four, and no image above a quarter
	key := func(i int) scriptKey { return scriptKey{byte(i)} }
	for i := range 4 {
		if c.get(key(i)) != nil {
			t.Fatalf("script %d found before it was kept", i)
		}
		c.put(key(i), imgs[i])
	}
	if n, _ := c.kept(); n != 4 {
		t.Fatalf("%d kept, want 4", n)
	}
	held := c.get(key(0)) // script 0 is now the most recently used, and held
	c.put(key(4), imgs[4])
	if n, used := c.kept(); n != 4 || used > c.budget {
		t.Fatalf("%d kept in %d bytes of a budget of %d: want 4 within it", n, used, c.budget)
	}
	if c.get(key(1)) != nil {
		t.Fatal("script 1, the least recently used, was not evicted")
	}
	for _, i := range []int{0, 2, 3, 4} {
		img := c.get(key(i))
		if img == nil {
			t.Fatalf("script %d was evicted", i)
		}
		c.release(img)
	}
	if imgs[1].data != nil {
		t.Fatal("an evicted image no restore held was not freed")
	}
	c.close()
	if held.data == nil {
		t.Fatal("an image was freed while a restore held it")
	}
	c.release(held)
	if held.data != nil {
		t.Fatal("an image was not freed when its last hold ended")
	}
	if got, want := c.counts(), (CompiledScriptStats{Hits: 5, Misses: 5, Evictions: 1}); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	// an image larger than a quarter of the budget is not kept
	small := newScriptCache(4*imgs[5].bytes() - 4)
	small.put(key(9), imgs[5])
	if n, _ := small.kept(); n != 0 || imgs[5].data != nil {
		t.Fatalf("an image above a quarter of the budget: %d kept, freed %v", n, imgs[5].data == nil)
	}
}

// reset serves again only an instance whose stack pointer is back at the
// stack's top, where every call that returned leaves it: a call that
// trapped (here: its interrupt poll) leaves the pointer inside its frames,
// state that no reset of the memory would undo, and reset refuses that
// instance; the same instance before the trap, and one whose run returned,
// are reset.
func TestResetRefusesAStackPointerOffTheTop(t *testing.T) {
	ctx := context.Background()
	e, err := New(ctx, CachedForTests(WithPoolSize(0), WithTrapForTests(func(script string) bool { return strings.HasPrefix(script, "trap") }))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(ctx) })
	if err := e.compile(ctx); err != nil {
		t.Fatal(err)
	}
	in := e.testInstance(t)
	if sp, err := in.stackPointerAt(ctx); err != nil || sp != e.image.stack {
		t.Fatalf("a new instance's stack pointer is %#x (%v), want the stack's top %#x", sp, err, e.image.stack)
	}
	if raw, err := in.exec(runCtx(), `"returned"`, "null", 16<<20, 0, false, 1); err != nil || raw.status != statusOK {
		t.Fatalf("status %d, %v", raw.status, err)
	}
	if !e.image.reset(in) {
		t.Fatal("an instance whose run returned was not reset")
	}

	trapping := context.WithValue(context.Background(), runStateKey{}, &runState{deadline: time.Now().Add(time.Minute), trap: true})
	if _, err := in.exec(trapping, `trap: for (;;) {}`, "null", 16<<20, 0, false, 1); err == nil || !isAbort(err) {
		t.Fatalf("the run did not trap: %v", err)
	}
	if in.mod.IsClosed() {
		t.Fatal("the trap closed the instance; the test needs one that is still open")
	}
	sp, err := in.stackPointerAt(ctx)
	if err != nil || sp >= e.image.stack {
		t.Fatalf("after a trap the stack pointer is %#x (%v), want below the stack's top %#x", sp, err, e.image.stack)
	}
	if e.image.reset(in) {
		t.Fatalf("an instance whose stack pointer is %#x, not %#x, was reset", sp, e.image.stack)
	}
}

// A script's key is its sha256 whichever way it is reached: the key kept
// for the last script serves only a script of the same text (the same
// string, or a copy of it), never another of the same length.
func TestKeyOfIsTheScriptsHash(t *testing.T) {
	e := testEngine(t, DefaultMaxMemoryBytes)
	a, b := "input + 1 /* a */", "input + 1 /* b */"
	for i, s := range []string{a, a, b, a, string([]byte(a)), b, b} {
		if got, want := e.keyOf(s), scriptKey(sha256.Sum256([]byte(s))); got != want {
			t.Fatalf("key %d of %q is another script's", i, s)
		}
	}
}
