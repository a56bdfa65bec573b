package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// shLines returns the lines of README.md's ```sh blocks.
func shLines(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		for _, l := range strings.Split(m[1], "\n") {
			lines[strings.TrimSpace(l)] = true
		}
	}
	return lines
}

// README's set-up is what CI does: its apt-get line installs the packages
// .ci/run installs (quickjs/debian-packages.txt), and its test command and
// the checked engine's are the ones .ci/run runs, each as a line of a sh
// block that a reader can paste.
func TestReadmeSetUp(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash to run .ci/run")
	}
	readme := shLines(t)
	want := map[string]string{}
	for _, arg := range []string{"--install-line", "--test-command", "--rebuild-command", "--checked-command"} {
		out, err := exec.Command("bash", ".ci/run", arg).Output()
		if err != nil {
			t.Fatalf(".ci/run %s: %v", arg, err)
		}
		line := strings.TrimSpace(string(out))
		if line == "" || strings.Contains(line, "\n") {
			t.Fatalf(".ci/run %s printed %q, want one line", arg, out)
		}
		if !readme[line] {
			t.Errorf("README.md has no sh line %q (.ci/run %s)", line, arg)
		}
		want[arg] = line
	}
	// and no other: an install line or test command of its own would be
	// stale (a run of one named test, -run, on the checked engine is not
	// the checked engine's command, and may stand beside it)
	for l := range readme {
		if strings.Contains(l, "apt-get install") && l != want["--install-line"] {
			t.Errorf("README.md installs %q, not .ci/run's %q", l, want["--install-line"])
		}
		if strings.HasPrefix(l, "go test -race") && l != want["--test-command"] {
			t.Errorf("README.md runs %q, not .ci/run's %q", l, want["--test-command"])
		}
		if strings.HasPrefix(l, "SANDBOX_REBUILD_WASM=1") && l != want["--rebuild-command"] {
			t.Errorf("README.md runs %q, not .ci/run's %q", l, want["--rebuild-command"])
		}
		if strings.Contains(l, "-tags checkedengine") && !strings.Contains(l, " -run ") && l != want["--checked-command"] {
			t.Errorf("README.md runs %q, not .ci/run's %q", l, want["--checked-command"])
		}
	}
}

// README's layout table says, for each Go package it lists, what of this
// module the package imports: the column is what `go list` says, so that a
// reader can trust the map of the dependencies.
func TestReadmeLayoutImports(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/loom-plugins/sandbox-cloudrun/"
	row := regexp.MustCompile("(?m)^\\| `([a-z/]+)/` \\| .* \\| (.*) \\|$")
	rows := row.FindAllStringSubmatch(string(b), -1)
	checked := 0
	for _, m := range rows {
		dir, column := m[1], m[2]
		out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, "./"+dir).Output()
		if err != nil {
			continue // not a Go package (terraform/, clients/typescript/, …)
		}
		checked++
		var got []string
		for _, imp := range strings.Fields(string(out)) {
			if strings.HasPrefix(imp, mod) {
				got = append(got, strings.TrimPrefix(imp, mod))
			}
		}
		var want []string
		for _, n := range regexp.MustCompile("`([a-z/]+)`").FindAllStringSubmatch(column, -1) {
			want = append(want, n[1])
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("README.md says %s/ imports %v; it imports %v", dir, want, got)
		}
	}
	if checked < 10 {
		t.Errorf("checked %d packages of README.md's layout table; its rows: %d", checked, len(rows))
	}
}

// The files README.md's commands name are there: a reader pastes a
// command of a sh block, or of a console block (its lines that begin with
// "$ "), and it finds its script and its inputs in a fresh clone.
func TestReadmeCommandsNameFilesThatExist(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var commands []string
	for l := range shLines(t) {
		commands = append(commands, l)
	}
	for _, m := range regexp.MustCompile("(?s)```console\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		for _, l := range strings.Split(m[1], "\n") {
			if strings.HasPrefix(l, "$ ") || strings.HasPrefix(l, "    ") { // a command, or its continuation
				commands = append(commands, l)
			}
		}
	}
	file := regexp.MustCompile(`[A-Za-z0-9_./*-]+\.(?:js|json|ndjson)\b`)
	checked := 0
	for _, c := range commands {
		for _, name := range file.FindAllString(c, -1) {
			if strings.HasPrefix(name, "/") {
				continue // a place the command makes, not one of the repository's
			}
			checked++
			if got, _ := filepath.Glob(name); len(got) == 0 {
				t.Errorf("README.md's command %q names %s, which is not in the repository", strings.TrimSpace(c), name)
			}
		}
	}
	if checked < 5 {
		t.Errorf("only %d files named by README.md's commands: is the pattern still theirs?", checked)
	}
}

// README.md's problem documents are what the service answers: each curl
// of its console blocks whose answer it shows as a problem is sent to the
// service as `go run .` starts it (STORE_URL=examples/store), and the
// answer must be the README's byte for byte, but for its instance (a
// request's id).
func TestReadmeProblemExamples(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	type example struct{ path, body, answer string }
	var examples []example
	curl := regexp.MustCompile(`curl -s localhost:8080(\S+)`)
	body := regexp.MustCompile(`-d '([^']*)'`)
	for _, m := range regexp.MustCompile("(?s)```console\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		lines := strings.Split(m[1], "\n")
		for i := 0; i < len(lines); i++ {
			if !strings.HasPrefix(lines[i], "$ ") {
				continue
			}
			cmd := lines[i]
			for strings.HasSuffix(lines[i], `\`) && i+1 < len(lines) {
				i++
				cmd += "\n" + lines[i]
			}
			if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], `{"type":"https://`) {
				continue
			}
			p, d := curl.FindStringSubmatch(cmd), body.FindStringSubmatch(cmd)
			if p == nil || d == nil {
				t.Errorf("README.md shows a problem for %q, which is not a curl -s localhost:8080… -d '…' this test can send", cmd)
				continue
			}
			examples = append(examples, example{p[1], d[1], lines[i+1]})
		}
	}
	if len(examples) == 0 {
		t.Fatal("README.md shows no problem document: is the pattern still its?")
	}
	store, err := filepath.Abs("examples/store")
	if err != nil {
		t.Fatal(err)
	}
	s := startService(t, "STORE_URL="+store)
	instance := regexp.MustCompile(`"instance":"[^"]*"`)
	for _, ex := range examples {
		_, got := postRaw(t, s.URL+ex.path, ex.body)
		if g, w := instance.ReplaceAllString(strings.TrimSuffix(string(got), "\n"), `"instance":"…"`), instance.ReplaceAllString(ex.answer, `"instance":"…"`); g != w {
			t.Errorf("README.md shows, for POST %s %s,\n%s\nthe service answers\n%s", ex.path, ex.body, ex.answer, got)
		}
	}
}

// README.md's first section is the map of the documents: every document of
// the repository (docs/*.md, RATIONALE.md, the packages' READMEs) is a row
// of it with a line on what it is for, and every row names a file that is
// there. Its last section says where to read next, naming documents that
// are there too.
func TestReadmeMapsEveryDocument(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	sections := regexp.MustCompile(`(?m)^## (.+)$`).FindAllStringSubmatchIndex(readme, -1)
	if len(sections) < 2 {
		t.Fatal("README.md has fewer than two ## sections")
	}
	section := func(i int) (string, string) {
		end := len(readme)
		if i+1 < len(sections) {
			end = sections[i+1][0]
		}
		return readme[sections[i][2]:sections[i][3]], readme[sections[i][1]:end]
	}
	title, mapText := section(0)
	if title != "The documents" {
		t.Fatalf("README.md's first section is %q; the map of the documents, \"The documents\", comes first", title)
	}
	rows := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| \\[`([^`]+)`\\]\\(([^)]+)\\) \\| (.*) \\|$").FindAllStringSubmatch(mapText, -1) {
		if m[1] != m[2] {
			t.Errorf("README.md's map names %s but links %s", m[1], m[2])
		}
		if len(strings.Fields(m[3])) < 5 {
			t.Errorf("README.md's map says of %s only %q: a line on what it is for", m[1], m[3])
		}
		if _, err := os.Stat(m[2]); err != nil {
			t.Errorf("README.md's map names %s, which is not there", m[2])
		}
		rows[m[1]] = m[3]
	}
	var docs []string
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") && path != "README.md" {
			docs = append(docs, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 10 {
		t.Fatalf("found %d documents: %v", len(docs), docs)
	}
	for _, d := range docs {
		if _, ok := rows[d]; !ok {
			t.Errorf("README.md's map of the documents has no row for %s", d)
		}
	}
	title, next := section(len(sections) - 1)
	if title != "Where to read next" {
		t.Fatalf("README.md's last section is %q, not \"Where to read next\"", title)
	}
	named := regexp.MustCompile("`([A-Za-z/_.-]+\\.md)`").FindAllStringSubmatch(next, -1)
	if len(named) < 5 {
		t.Errorf("README.md's \"Where to read next\" names %d documents", len(named))
	}
	for _, m := range named {
		if _, ok := rows[m[1]]; !ok {
			t.Errorf("README.md's \"Where to read next\" names %s, which the map does not", m[1])
		}
	}
}
