package quickjs

import (
	"fmt"
	"os"
	"testing"
)

// testCacheDir is one wazero compilation cache for the engines of this
// package's tests. Compiling the engine is the costliest step of a test that
// makes an engine of its own (seconds quiet, tens of seconds under the race
// detector on a busy machine), and what the tests check is the compiled
// engine's behaviour, the same from the cache: the first engine compiles and
// fills it, the others load it, as the service's workers do.
// TestCompilationCache checks the cache itself, in a directory of its own.
var testCacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "quickjs-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickjs tests: a compilation cache:", err)
		os.Exit(1)
	}
	testCacheDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// CachedForTests returns opts after the option that puts the engine's
// compiled code in the tests' shared cache (a test's own options come
// after it, so WithCompilationCache among them wins).
func CachedForTests(opts ...Option) []Option {
	return append([]Option{WithCompilationCache(testCacheDir)}, opts...)
}
