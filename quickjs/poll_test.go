package quickjs_test

import (
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// A run stopped inside find, between one element and the next, ends as its
// CPU budget says and leaves a working engine. find polls the interrupt
// handler at the top of each turn, after the turn before has freed its
// element; a stop there must not free it again. When it did, the array's
// scope ended with the exception and freed the elements, the shared string
// went once too often, and QuickJS aborted: a trap, answered as the
// engine's failure. Where the budget runs out depends on the ticks before,
// so these are scripts whose stop falls on find's poll: the one the
// FuzzBuiltinSizes run found (its corpus file 75f82eec5385ef3e), and the
// same cut down.
func TestFindStoppedBetweenElements(t *testing.T) {
	e := newEngine(t, quickjs.WithCPUBudget(50), quickjs.WithPoolSize(1))
	l := spi.Limits{WallClock: 20 * time.Second, MemoryBytes: 16 << 20}
	for _, script := range []string{
		`const oom = e => { try { return e instanceof InternalError && e.message === "out of memory" } catch { return false } };
let n = 0, v;
try { const r = Array(2**16+1).fill("x"); v = r.find(x => (Array.prototype.push.call(r, x), 0)); n++ } catch (e) { if (oom(e)) throw e }
n`,
		`let n = 0; try { const r = Array(2**16+1).fill("x"); r.find(x => (Array.prototype.push.call(r, x), 0)); } catch (e) { } n`,
		`let n = 0; try { const r = Array(2**16+1).fill({}); r.findLast(x => (Array.prototype.push.call(r, x), 0)); } catch (e) { } n`,
	} {
		if out := eval(t, e, script, "null", l); out.Kind != spi.KindLimit || out.Limit != spi.LimitCPU {
			t.Errorf("%.60q: %s, want limit cpu", script, describe(out))
		}
		if out := eval(t, e, "input + 1", "41", l); !out.OK || string(out.Value) != "42" {
			t.Fatalf("the run after it: %s, want the value 42", describe(out))
		}
	}
}
