package quickjs_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The engine's C sources as they are built: the pinned tarball with our
// patches applied, as build.sh applies them.
func patchedSource(t *testing.T) string {
	t.Helper()
	dir := unpackedTarball(t)
	patches, err := filepath.Glob("patches/[0-9][0-9][0-9][0-9]-*.patch")
	if err != nil || len(patches) == 0 {
		t.Fatalf("no patches: %v", err)
	}
	sort.Strings(patches)
	for _, p := range patches {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("patch", "-d", dir, "-p1", "--forward", "--batch", "--fuzz=0", "--quiet")
		cmd.Stdin = f
		out, err := cmd.CombinedOutput()
		f.Close()
		if err != nil {
			t.Fatalf("%s does not apply: %v\n%s", p, err, out)
		}
	}
	return dir
}

// sizeSiteCall is what counts as a site of the 32-bit size audit: a call
// of an allocation, reallocation, copy or fill function, whose size a
// script may drive. docs/security.md, "32-bit sizes", has a row for every
// one (and for the arithmetic sites that no pattern finds).
var sizeSiteCall = regexp.MustCompile(`\b(js_malloc|js_mallocz|js_realloc|js_realloc2|js_malloc_rt|js_mallocz_rt|js_realloc_rt|js_resize_array|js_realloc_array|lre_realloc|dbuf_realloc|alloca|malloc|realloc|calloc|memcpy|memmove|memset|js_def_malloc|js_def_realloc)\s*\(`)

var (
	funcHeader = regexp.MustCompile(`^[A-Za-z_].*\(`)
	firstCall  = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*\(`)
)

// sizeSites counts the sites of a C file by "file function callee": a
// function is the first name called on the last line at column 0 that
// opens a parenthesis and does not end a declaration, before a "{" at
// column 0 (QuickJS's style); "(file scope)" after a "}" at column 0. A
// site inside a comment counts too: the table says so.
func sizeSites(t *testing.T, dir, file string, into map[string]int) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fn, cand := "(file scope)", ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if funcHeader.MatchString(line) && !strings.HasSuffix(strings.TrimRight(line, " \t"), ";") {
			cand = line
		}
		if strings.HasPrefix(line, "{") && cand != "" {
			if m := firstCall.FindStringSubmatch(cand); m != nil {
				fn = m[1]
			} else {
				fn = strings.TrimSpace(cand)
			}
		}
		if strings.HasPrefix(line, "}") {
			fn = "(file scope)"
		}
		code, _, _ := strings.Cut(line, "//")
		for _, m := range sizeSiteCall.FindAllStringSubmatch(code, -1) {
			into[fmt.Sprintf("%s %s %s", file, fn, m[1])]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

var auditRow = regexp.MustCompile("^\\| `([^`]+)` `([^`]+)` \\(([^)]+)\\) \\|.*\\| (safe|unreachable|fixed: [0-9]{4}-[a-z0-9-]+) \\|$")

// auditTable reads docs/security.md's "32-bit sizes" table: its rows
// counted by "file function callee", and the patches its verdicts name.
func auditTable(t *testing.T, doc []byte) (rows map[string]int, patches map[string]bool) {
	t.Helper()
	_, section, ok := bytes.Cut(doc, []byte("\n## 32-bit sizes\n"))
	if !ok {
		t.Fatal(`docs/security.md has no "## 32-bit sizes" section`)
	}
	if i := bytes.Index(section, []byte("\n## ")); i >= 0 {
		section = section[:i]
	}
	const header = "| Site | Size, length or index | What bounds it on wasm32 | Verdict |"
	_, table, ok := bytes.Cut(section, []byte(header+"\n|---|---|---|---|\n"))
	if !ok {
		t.Fatalf("the 32-bit sizes section has no table headed %q", header)
	}
	rows, patches = map[string]int{}, map[string]bool{}
	for _, line := range strings.Split(string(table), "\n") {
		if !strings.HasPrefix(line, "|") {
			break // the table's end
		}
		m := auditRow.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("a row of the 32-bit sizes table is not `file` `function` (callee) | ... | verdict: %.120s", line)
			continue
		}
		rows[m[1]+" "+m[2]+" "+m[3]]++
		if p, ok := strings.CutPrefix(m[4], "fixed: "); ok {
			patches[p] = true
		}
	}
	return rows, patches
}

// The audit covers every site: each call of an allocation, copy or fill
// function in the engine's C sources as built has a row in the table of
// docs/security.md, "32-bit sizes", and the table has no row for a site
// that is not there. A QuickJS upgrade or a patch that adds, moves or drops
// a site fails here until its row says what bounds it on wasm32. Every
// patch a verdict names exists, and every patch of ours that fixes a site
// (0006 on) is named by one.
func TestSizeAuditCoversEverySite(t *testing.T) {
	dir := patchedSource(t)
	src := map[string]int{}
	for _, f := range []string{"quickjs.c", "libregexp.c", "libunicode.c", "cutils.c", "dtoa.c"} {
		sizeSites(t, dir, f, src)
	}
	doc, err := os.ReadFile("../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, named := auditTable(t, doc)
	total := 0
	for site, n := range src {
		total += n
		if got := rows[site]; got != n {
			t.Errorf("%s: %d sites in the source, %d rows in docs/security.md's 32-bit sizes table", site, n, got)
		}
	}
	for site, n := range rows {
		if _, ok := src[site]; !ok && !strings.HasSuffix(site, " arith") && !strings.HasPrefix(site, "quickjs/c/") {
			t.Errorf("%s: %d rows in the table, no such site in the source", site, n)
		}
	}
	if total < 250 {
		t.Fatalf("only %d sites found: is the source right?", total)
	}
	for p := range named {
		if _, err := os.Stat("patches/" + p + ".patch"); err != nil {
			t.Errorf("a verdict names %s, which is not in patches/", p)
		}
	}
	// Every fix from 0006 on has its row in the table of fixes (cause, and
	// the script that reached it), and is named by a verdict of the sizes
	// table unless its row says it fixes something other than a size (a
	// bug the checked engine found on an allocation-failure path).
	fixes := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([0-9]{4}-[a-z0-9-]+)` \\| ([^|]*)\\|").FindAllSubmatch(doc, -1) {
		fixes[string(m[1])] = string(m[2])
	}
	all, _ := filepath.Glob("patches/[0-9][0-9][0-9][0-9]-*.patch")
	for _, p := range all {
		name := strings.TrimSuffix(filepath.Base(p), ".patch")
		if name < "0006" {
			continue
		}
		cause, ok := fixes[name]
		switch {
		case !ok:
			t.Errorf("patches/%s has no row in docs/security.md's table of fixes", name)
		case !named[name] && !strings.Contains(cause, "not a size"):
			t.Errorf("patches/%s fixes no row of the 32-bit sizes table, and its row in the table of fixes does not say it fixes something else", name)
		}
	}
	t.Logf("%d sites in %d (file, function, callee) groups", total, len(src))
}
