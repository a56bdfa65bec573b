package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// codeFile is a file of code and its text.
type codeFile struct{ path, text string }

// codeFiles returns, in the order of their paths, every file of code in the
// repository whose comments a reader of this repository reads: Go, C, shell,
// Terraform, YAML and JavaScript. It leaves out what is not ours to word (testdata,
// node_modules, the build outputs) and the TypeScript package, whose readers
// are loom's users and read loom's own documents.
func codeFiles(t *testing.T) []codeFile {
	t.Helper()
	exts := map[string]bool{".go": true, ".c": true, ".h": true, ".sh": true, ".tf": true, ".hcl": true,
		".yaml": true, ".yml": true, ".js": true, ".mjs": true, ".example": true}
	skip := map[string]bool{".git": true, "clients/typescript": true, "quickjs/build": true, "bench/out": true}
	var files []codeFile
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skip[filepath.ToSlash(path)] || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// a script without an extension (.ci/run) is known by its #! line
		if exts[filepath.Ext(path)] || d.Name() == "Dockerfile" || strings.HasPrefix(string(b), "#!") {
			files = append(files, codeFile{filepath.ToSlash(path), string(b)})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("found no code to read")
	}
	slices.SortFunc(files, func(a, b codeFile) int { return strings.Compare(a.path, b.path) })
	return files
}

// lineOf returns the line number of byte offset i of text.
func lineOf(text string, i int) int { return strings.Count(text[:i], "\n") + 1 }

// A comment of this repository may not cite loom's design records by number:
// a reader here cannot open them. docs/spi.md states their rules in this
// project's words, and comments point to its sections instead. A citation
// broken across two comment lines counts, and so does one of a record's
// decisions named bare, by its D and number, in parentheses or not.
func TestCommentsCiteNoDesignRecord(t *testing.T) {
	cite := regexp.MustCompile(`\bADR(?:[ \t-]|\n[ \t]*(?://|#|\*)?[ \t]*)?0\d{3}\b|\bD\d{1,2}\b`)
	for _, f := range codeFiles(t) {
		path, text := f.path, f.text
		for _, m := range cite.FindAllStringIndex(text, -1) {
			t.Errorf("%s:%d cites a design record of loom by number (%q); point to a section of docs/spi.md instead",
				path, lineOf(text, m[0]), text[m[0]:m[1]])
		}
	}
}

// A comment that names a section of docs/spi.md (`docs/spi.md, "Outcomes"`)
// names one of its ## headings, so that the pointer leads somewhere. The name
// may be broken across comment lines, and quoted with \" inside a string.
func TestSpiPointersNameSections(t *testing.T) {
	b, err := os.ReadFile("docs/spi.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (.+?)\s*$`).FindAllStringSubmatch(string(b), -1) {
		sections[m[1]] = true
	}
	if len(sections) == 0 {
		t.Fatal("docs/spi.md has no ## sections")
	}
	pointer := regexp.MustCompile(`docs/spi\.md,\s*(?:(?://|#|\*)\s*)?\\?"([^"\\]{1,120})\\?"`)
	leader := regexp.MustCompile(`\s*\n\s*(?:(?://|#|\*)\s*)?`)
	found := 0
	for _, f := range codeFiles(t) {
		path, text := f.path, f.text
		for _, m := range pointer.FindAllStringSubmatchIndex(text, -1) {
			found++
			name := leader.ReplaceAllString(text[m[2]:m[3]], " ")
			if !sections[name] {
				t.Errorf("%s:%d points to docs/spi.md, %q, which is not a ## section of docs/spi.md", path, lineOf(text, m[0]), name)
			}
		}
	}
	if found == 0 {
		t.Error("no comment points to a section of docs/spi.md: the pattern no longer matches how they are written")
	}
}

// docs/reliability.md lists every fuzz target of the repository, as
// pkg.FuzzName, and counts them in its table of contents: CI fuzzes every
// one it finds, and the page is where a reader learns what each holds.
func TestFuzzTargetsAreListed(t *testing.T) {
	b, err := os.ReadFile("docs/reliability.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	fuzz := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	var targets []string
	for _, f := range codeFiles(t) {
		if !strings.HasSuffix(f.path, "_test.go") {
			continue
		}
		pkg := regexp.MustCompile(`(?m)^package (\w+)`).FindStringSubmatch(f.text)
		for _, m := range fuzz.FindAllStringSubmatch(f.text, -1) {
			name := strings.TrimSuffix(pkg[1], "_test") + "." + m[1]
			targets = append(targets, name)
			if !strings.Contains(doc, "| `"+name+"`") {
				t.Errorf("%s (%s) is not in docs/reliability.md's \"Fuzz targets\" table", name, f.path)
			}
		}
	}
	if len(targets) == 0 {
		t.Fatal("found no fuzz target")
	}
	if want := fmt.Sprintf("the %d targets", len(targets)); !strings.Contains(doc, want) {
		t.Errorf("docs/reliability.md does not say %q: %v", want, targets)
	}
	if listed := regexp.MustCompile("(?m)^\\| `\\w+\\.Fuzz\\w+`").FindAllString(doc, -1); len(listed) != len(targets) {
		t.Errorf("docs/reliability.md lists %d targets, the code has %d: %v", len(listed), len(targets), targets)
	}
}
