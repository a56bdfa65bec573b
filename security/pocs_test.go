package security

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// poc is a proof-of-concept script of a known QuickJS bug, with what its
// header says: where it comes from, the bug, and the outcome expected here.
type poc struct {
	file, source, bug string
	patch             string // the patch of ours that fixes it (quickjs/patches)
	native            string // what native QuickJS on a 64-bit host answers
	script            string
	want              want
	stuck             bool
	knownBug          string // the failing test that shows it, until its fix lands
	wall              time.Duration
	memory            int64
}

// readPoCs reads the .js files of dir (testdata/quickjs-pocs, say): one
// file per PoC, each opening with "// source:", "// bug:" and "// expect:"
// lines (and optionally "// wall: <ms>", "// memory: <bytes>",
// "// patch: <name>" and "// native: <answer>"). expect is one of
//
//	ok [<exact JSON value>]
//	threw <Name> [<message substring>]
//	limit <cpu|memory|wallClock>
//	limit <kind> or ok   (either: the engine's heap layout decides)
//	stuck   (never reaches the interrupt handler: run against its own process)
//
// "// known-bug: TestBugX" marks a PoC whose expected outcome is not what
// the service gives yet: TestQuickJSPoCs skips it, and TestBugX (in
// bugs_test.go) runs it and fails until the fix lands.
func readPoCs(t *testing.T, dir string) []poc {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no PoCs: %v", err)
	}
	var out []poc
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := poc{file: filepath.Base(f), script: string(b)}
		var expect string
		for _, line := range strings.Split(string(b), "\n") {
			rest, ok := strings.CutPrefix(line, "// ")
			if !ok {
				if !strings.HasPrefix(line, "//") {
					break // the header ends at the first line of code
				}
				continue
			}
			key, val, _ := strings.Cut(rest, ": ")
			switch key {
			case "source":
				p.source = val
			case "bug", "bug class", "bug report", "bug (quickjs-ng)":
				p.bug = val
			case "expect":
				expect = val
			case "known-bug":
				p.knownBug = val
			case "patch":
				p.patch = val
			case "native":
				p.native = val
			case "wall":
				ms, err := strconv.Atoi(val)
				if err != nil {
					t.Fatalf("%s: wall: %v", p.file, err)
				}
				p.wall = time.Duration(ms) * time.Millisecond
			case "memory":
				n, err := strconv.ParseInt(val, 10, 64)
				if err != nil {
					t.Fatalf("%s: memory: %v", p.file, err)
				}
				p.memory = n
			}
		}
		if p.source == "" || p.bug == "" || expect == "" {
			t.Fatalf("%s: the header needs source, bug and expect lines", p.file)
		}
		if i := strings.Index(expect, " ("); i >= 0 {
			expect = expect[:i] // a remark
		}
		if alts := strings.Split(expect, " or "); len(alts) > 1 {
			// either of two outcomes without arguments, "limit memory or ok":
			// the engine's heap layout decides which
			var classes []string
			for _, a := range alts {
				kind, arg, _ := strings.Cut(a, " ")
				switch {
				case kind == "ok" && arg == "":
					classes = append(classes, "ok")
				case kind == "limit" && arg != "":
					classes = append(classes, "limit:"+arg)
				default:
					t.Fatalf("%s: expect %q: an alternative is \"ok\" or \"limit KIND\"", p.file, expect)
				}
			}
			p.want = want{class: strings.Join(classes, "|")}
			out = append(out, p)
			continue
		}
		kind, arg, _ := strings.Cut(expect, " ")
		switch kind {
		case "ok":
			p.want = want{class: "ok", value: arg}
		case "threw":
			name, msg, _ := strings.Cut(arg, " ")
			p.want = want{class: "threw", name: name, message: msg}
		case "limit":
			p.want = want{class: "limit:" + arg}
		case "stuck":
			p.stuck = true
		default:
			t.Fatalf("%s: unknown expect %q", p.file, expect)
		}
		out = append(out, p)
	}
	return out
}

// Every public PoC of a known QuickJS bug ends, through the service, as the
// defined outcome its header states: on both routes, within its deadline,
// never a trap surfacing as a 5xx. A PoC that never reaches the interrupt
// handler runs against its own child process and must end it.
func TestQuickJSPoCs(t *testing.T) {
	pocs := readPoCs(t, "testdata/quickjs-pocs")
	if len(pocs) < 15 {
		t.Fatalf("only %d PoCs", len(pocs))
	}
	for _, p := range pocs {
		t.Run(strings.TrimSuffix(p.file, ".js"), func(t *testing.T) {
			if p.knownBug != "" {
				t.Skipf("a known bug: %s runs it and fails until the fix lands", p.knownBug)
			}
			if p.stuck {
				runStuckPoC(t, p)
				return
			}
			s := shared(t)
			for _, rt := range []route{spiRoute, evaluations} {
				q := req{script: p.script, wall: p.wall, memory: p.memory}
				if q.wall == 0 {
					q.wall = generous
				}
				check(t, q, s.do(t, rt, q), p.want)
			}
		})
	}
}

func runStuckPoC(t *testing.T, p poc) {
	if testing.Short() {
		t.Skip("stuck PoC: starts a child service")
	}
	newStuckChild(t).stuck(t, evaluations, req{script: p.script, wall: stuckWall})
}
