package quickjs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// tarballHelpers are the functions through which a test needs the pinned
// tarball or the C toolchain; SANDBOX_REBUILD_WASM is the variable that
// makes their absence a failure.
var tarballHelpers = []string{"pinnedTarball", "unpackedTarball", "patchedSource"}

// The rebuild stage of .ci/run (SANDBOX_REBUILD_WASM=1, where a missing
// tarball or tool fails instead of skipping) runs exactly the tests that
// need the tarball or the toolchain: a test that needs them and is not
// named there would only ever be skipped where they are missing, and a name
// there that no test has would run nothing.
func TestRebuildStageRunsTheTarballTests(t *testing.T) {
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^rebuild_command=.*-run '"'"'\^\(([A-Za-z0-9_|]+)\)\$'"'"' \./quickjs/'$`).FindSubmatch(ci)
	if m == nil {
		t.Fatal(".ci/run has no rebuild_command='SANDBOX_REBUILD_WASM=1 go test … -run '^(TestA|TestB)$' ./quickjs/' line")
	}
	named := strings.Split(string(m[1]), "|")
	slices.Sort(named)

	needing, all := tarballTests(t)
	if !slices.Equal(named, needing) {
		t.Errorf(".ci/run's rebuild stage runs %v; the tests that need the tarball or the toolchain are %v", named, needing)
	}
	for _, n := range named {
		if !all[n] {
			t.Errorf(".ci/run's rebuild stage names %s, which no test of quickjs/ is", n)
		}
	}
}

// tarballTests returns the sorted names of the tests of this directory that
// call a tarball helper or read SANDBOX_REBUILD_WASM, and every test's name.
func tarballTests(t *testing.T) ([]string, map[string]bool) {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var needing []string
	all := map[string]bool{}
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
				continue
			}
			all[fn.Name.Name] = true
			if needsTarball(fn.Body) {
				needing = append(needing, fn.Name.Name)
			}
		}
	}
	slices.Sort(needing)
	return needing, all
}

func needsTarball(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && slices.Contains(tarballHelpers, id.Name) {
				found = true
			}
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); err == nil && s == "SANDBOX_REBUILD_WASM" {
				found = true
			}
		}
		return !found
	})
	return found
}

// The check above sees a test that needs the tarball, whichever way it asks.
func TestRebuildStageCheckSeesTarballTests(t *testing.T) {
	for src, want := range map[string]bool{
		`package p; func f() { dir := unpackedTarball(t); _ = dir }`:               true,
		`package p; func f() { patchedSource(t) }`:                                 true,
		`package p; func f() { if os.Getenv("SANDBOX_REBUILD_WASM") == "" {} }`:    true,
		`package p; func f() { run(t, "1 + 1") }`:                                  false,
		`package p; func f() { _ = "SANDBOX_REBUILD_WASM=1 is set by the stage" }`: false,
	} {
		file, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := needsTarball(file.Decls[0].(*ast.FuncDecl).Body); got != want {
			t.Errorf("needsTarball(%s) = %v, want %v", src, got, want)
		}
	}
}
