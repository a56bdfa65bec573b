package quickjs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// debianPackages reads debian-packages.txt: the packages build.sh needs, in
// the order it checks for them.
func debianPackages(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("debian-packages.txt")
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			pkgs = append(pkgs, line)
		}
	}
	if len(pkgs) == 0 {
		t.Fatal("debian-packages.txt names no package")
	}
	return pkgs
}

// runBuild runs build.sh with env added to the test's environment and
// returns its output; build.sh must fail.
func runBuild(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command("bash", "./build.sh")
	cmd.Env = append(append(os.Environ(), "OUT="+filepath.Join(t.TempDir(), "sandbox.wasm")), env...)
	b, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("build.sh succeeded with %v:\n%s", env, b)
	}
	return string(b)
}

// installLine is the line build.sh prints to install what is missing.
func installLine(t *testing.T, out string) []string {
	t.Helper()
	const prefix = "apt-get update && apt-get install -y "
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, prefix) {
			return strings.Fields(strings.TrimPrefix(line, prefix))
		}
	}
	t.Fatalf("build.sh printed no %q line:\n%s", prefix, out)
	return nil
}

// A machine without the C toolchain gets, from build.sh (and so from
// TestWasmRebuildsIdentically), the one line that installs what is missing,
// naming each package; with nothing installed, that is every package of
// debian-packages.txt. Needs no toolchain: the tools are hidden.
func TestBuildNamesMissingPackages(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"bash", "dirname"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	bash := filepath.Join(bin, "bash")
	t.Run("nothing installed", func(t *testing.T) {
		cmd := exec.Command(bash, "./build.sh")
		cmd.Env = []string{"PATH=" + bin, "LLVM_DIR=/nonexistent", "WASI_SYSROOT=/nonexistent", "OUT=" + filepath.Join(t.TempDir(), "sandbox.wasm")}
		b, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("build.sh succeeded without its tools:\n%s", b)
		}
		if got, want := strings.Join(installLine(t, string(b)), " "), strings.Join(debianPackages(t), " "); got != want {
			t.Errorf("build.sh would install %q, want debian-packages.txt's %q:\n%s", got, want, b)
		}
		for _, tool := range []string{"clang-14", "wasm-ld", "wasm-opt", "patch", "xz"} {
			if !strings.Contains(string(b), tool+" not found (Debian package ") {
				t.Errorf("build.sh does not name the missing %s:\n%s", tool, b)
			}
		}
	})
	// Only the compiler missing: the line names clang-14 first (and, on a
	// machine without the rest, what else is missing).
	t.Run("no compiler", func(t *testing.T) {
		out := runBuild(t, "CC=clang-does-not-exist")
		pkgs := installLine(t, out)
		if pkgs[0] != "clang-14" {
			t.Errorf("build.sh would install %v, want clang-14 first:\n%s", pkgs, out)
		}
		known := map[string]bool{}
		for _, p := range debianPackages(t) {
			known[p] = true
		}
		for _, p := range pkgs {
			if !known[p] {
				t.Errorf("build.sh names %s, which debian-packages.txt does not list", p)
			}
		}
	})
}
