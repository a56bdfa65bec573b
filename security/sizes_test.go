package security

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sandboxsvc "github.com/loom-plugins/sandbox-cloudrun/service"
)

var patchName = regexp.MustCompile(`\b[0-9]{4}-[a-z0-9-]+\b`)

// Every site that the 32-bit size audit patched (docs/security.md, "32-bit
// sizes") has a probe in testdata/sizes that reaches it with a size that
// wrapped on wasm32 (or, for the bugs found beside them, the failure path
// that went wrong) and that the engine before the patch answered with a
// trap, a wrong value or a wrong error. Each now ends, on both routes, as
// its header says, the answer a 64-bit host gives where that host is not
// itself wrong; and after each, the same service serves an ordinary run.
// Every fixing patch (0006 on) has a probe.
func TestSizeProbes(t *testing.T) {
	if testing.Short() {
		t.Skip("the probes allocate up to 2 GiB")
	}
	probes := readPoCs(t, "testdata/sizes")
	s, stop := newService(func(c *sandboxsvc.Config) {
		// the largest probes need a 2 GiB memory limit and some seconds
		c.MaxMemoryBytes = 2 << 30
		c.MaxWallClock = 2 * time.Minute
		c.RequestTimeout = 4 * time.Minute
	})
	t.Cleanup(stop)
	probed := map[string]bool{}
	for _, p := range probes {
		names := patchName.FindAllString(p.patch, -1)
		if len(names) == 0 || p.native == "" {
			t.Fatalf("%s: the header needs a patch line naming the patch and a native line", p.file)
		}
		for _, n := range names {
			if _, err := os.Stat(filepath.Join("..", "quickjs", "patches", n+".patch")); err != nil {
				t.Fatalf("%s names %s, which quickjs/patches does not have", p.file, n)
			}
			probed[n] = true
		}
		t.Run(strings.TrimSuffix(p.file, ".js"), func(t *testing.T) {
			before := s.stuck()
			for _, rt := range []route{spiRoute, evaluations} {
				q := req{script: p.script, wall: p.wall, memory: p.memory}
				if q.wall == 0 {
					q.wall = generous
				}
				check(t, q, s.do(t, rt, q), p.want)
				next := req{script: "input + 1", input: "41"}
				check(t, next, s.do(t, rt, next), want{class: "ok", value: "42"})
			}
			if n := s.stuck() - before; n != 0 {
				t.Errorf("the service killed %d worker(s) for this probe", n)
			}
		})
	}
	all, err := filepath.Glob(filepath.Join("..", "quickjs", "patches", "[0-9][0-9][0-9][0-9]-*.patch"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		if n := strings.TrimSuffix(filepath.Base(f), ".patch"); n >= "0006" && !probed[n] {
			t.Errorf("patches/%s has no probe in testdata/sizes", n)
		}
	}
}
