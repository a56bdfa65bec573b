package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines is the most lines a file of code of ours holds: past it, a file
// holds more than one concern, and a reader looking for one scrolls past
// the others.
const maxLines = 600

// longFiles may hold more, each for the reason given.
var longFiles = map[string]string{
	"internal/jsontext/jsontext.go": "the JSON reader is one recursive-descent parser, its states read best together",
}

// Every Go and TypeScript file of ours but a test stays under maxLines, so
// that a file holds one concern; a file that grows past it is split along
// its seams. An exception names its reason, and one that no longer needs to
// be is struck.
func TestFilesStayUnder600Lines(t *testing.T) {
	skip := map[string]bool{".git": true, "node_modules": true, "testdata": true, "dist": true, "dist-test": true}
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skip[d.Name()] || path == filepath.Join("bench", "out") || path == filepath.Join("quickjs", "build") {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		code := strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") ||
			strings.HasSuffix(name, ".ts") && !strings.HasSuffix(name, ".test.ts") && !strings.HasSuffix(name, ".d.ts")
		if !code {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		path = filepath.ToSlash(path)
		lines := strings.Count(string(b), "\n")
		_, excepted := longFiles[path]
		switch {
		case lines > maxLines && !excepted:
			t.Errorf("%s has %d lines, more than %d: split it along its seams, a concern a file", path, lines, maxLines)
		case lines <= maxLines && excepted:
			t.Errorf("%s has %d lines, within %d: strike it from longFiles", path, lines, maxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for path := range longFiles {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("longFiles names %s: %v", path, err)
		}
	}
	if checked < 100 {
		t.Errorf("checked %d files: is the walk still the repository's?", checked)
	}
}
