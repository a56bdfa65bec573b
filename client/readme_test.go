package client_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
)

// readmeBlock returns the fenced block of README.md right after
// `<!-- readme_test.go runs this block: NAME -->` (or "compiles", for a
// file of the program that it builds and does not call), without its
// fences.
func readmeBlock(t *testing.T, readme, name string) string {
	t.Helper()
	marker := "<!-- readme_test.go runs this block: " + name + " -->\n"
	if !strings.Contains(readme, marker) {
		marker = "<!-- readme_test.go compiles this block: " + name + " -->\n"
	}
	at := strings.Index(readme, marker)
	if at < 0 {
		t.Fatalf("README.md has no block marked %q", strings.TrimSpace(marker))
	}
	if strings.Contains(readme[at+1:], marker) {
		t.Fatalf("README.md marks two blocks %q", name)
	}
	m := regexp.MustCompile("(?s)\\A```[a-z]*\n(.*?\n)```\n").FindStringSubmatch(readme[at+len(marker):])
	if m == nil {
		t.Fatalf("the marker %q is not followed by a fenced block", name)
	}
	return m[1]
}

// The README's module set-up and program, as printed: its marked blocks run
// in a scratch directory against the service's binary (the Batch example
// built into the program beside its main.go), and the program's output
// must be the README's, byte for byte. The one thing the test changes
// in a block is the README's placeholder for the clone's path, which becomes
// this repository. The go commands work from the module cache alone
// (GOPROXY=off), as this module's own build does.
func TestReadmeProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the service and the README's program")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash to run the README's blocks")
	}
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	module, program, run, output := readmeBlock(t, readme, "module"), readmeBlock(t, readme, "main.go"),
		readmeBlock(t, readme, "run"), readmeBlock(t, readme, "output")
	batch := readmeBlock(t, readme, "batch.go") // built with the program, as the README says

	const placeholder = "/path/to/sandbox-cloudrun"
	if !strings.Contains(module, placeholder) {
		t.Fatalf("the module block no longer names the clone as %s:\n%s", placeholder, module)
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := regexp.MustCompile(`(?m)^mkdir (\S+) && cd (\S+)$`).FindStringSubmatch(module)
	if dir == nil || dir[1] != dir[2] {
		t.Fatalf("the module block does not start with \"mkdir DIR && cd DIR\":\n%s", module)
	}

	s := servicetest.Start(t, servicetest.Options{Env: []string{"STORE_URL=none"}})
	scratch := t.TempDir()
	env := append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOWORK=off", "GOFLAGS=-buildvcs=false",
		"SANDBOX_URL="+s.URL)
	sh := func(name, script, cwd string) string {
		t.Helper()
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir, cmd.Env = cwd, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the README's %q block failed (%v) in %s:\n%s--- stdout\n%s--- stderr\n%s", name, err, cwd, script, stdout.String(), stderr.String())
			}
		case <-time.After(5 * time.Minute):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("the README's %q block took over 5 minutes", name)
		}
		return stdout.String()
	}

	sh("module", strings.ReplaceAll(module, placeholder, repo), scratch)
	project := filepath.Join(scratch, dir[1])
	for name, text := range map[string]string{"main.go": program, "batch.go": batch} {
		if err := os.WriteFile(filepath.Join(project, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := sh("run", run, project); got != output {
		t.Errorf("the program printed\n%s\nthe README shows\n%s", got, output)
	}
}
