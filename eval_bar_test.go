package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// termScreen is what a terminal shows after out: its lines, a carriage
// return going back to the line's start and erase-in-line (CSI K) erasing
// from the cursor to the line's end, as the bar of eval -inputs uses them.
func termScreen(t *testing.T, out string) []string {
	t.Helper()
	var lines []string
	for _, seg := range strings.Split(out, "\n") {
		var line []byte
		col := 0
		for i := 0; i < len(seg); i++ {
			switch {
			case seg[i] == '\r':
				col = 0
			case strings.HasPrefix(seg[i:], "\x1b[K"):
				line = line[:col]
				i += 2
			case seg[i] < ' ':
				t.Fatalf("control %q in %q", seg[i], seg)
			case col < len(line):
				line[col] = seg[i]
				col++
			default:
				line = append(line, seg[i])
				col++
			}
		}
		lines = append(lines, string(line))
	}
	return lines
}

// eval -inputs draws its bar on a terminal only: piped, its standard
// error holds the log lines and nothing else, no carriage return and no
// terminal control; on a terminal (a pseudo-terminal that script(1) gives
// it) the bar is drawn while the inputs run, and every line written
// beside it, the answers' and the log's, is whole on the screen, the bar
// gone at the end.
func TestEvalInputsProgressBar(t *testing.T) {
	bin := mustBinary(t)
	dir := t.TempDir()
	script, inputs := filepath.Join(dir, "s.js"), filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(script, []byte(`const t = Date.now(); while (Date.now() - t < 100) {} input * 2`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inputs, []byte("1\n2\n3\n4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "LOG_LEVEL=info", "TERM=xterm")

	cmd := exec.Command(bin, "eval", "-inputs", inputs, script)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("eval -inputs: %v\n%s", err, stderr.String())
	}
	if strings.ContainsAny(stdout.String()+stderr.String(), "\r\x1b") {
		t.Errorf("piped, eval -inputs wrote a terminal's controls:\n%q\n%q", stdout.String(), stderr.String())
	}
	if n := strings.Count(stderr.String(), `"message":"evaluation"`); n != 4 {
		t.Errorf("piped, %d evaluation lines on stderr, want 4:\n%s", n, stderr.String())
	}

	scriptCmd, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to run eval on a pseudo-terminal")
	}
	cmd = exec.Command(scriptCmd, "-q", "-e", "-c", shellQuote(bin)+" eval -inputs "+shellQuote(inputs)+" "+shellQuote(script), "/dev/null")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script -c eval -inputs: %v\n%q", err, out)
	}
	raw := string(out)
	// the bar's width is the terminal's: script(1) gives it the test's
	for _, want := range []string{`\r0/4 [^\r]*  0%`, `\r4/4 [^\r]* 100%`} {
		if !regexp.MustCompile(want).MatchString(raw) {
			t.Errorf("on a terminal, no bar %q was drawn:\n%q", want, raw)
		}
	}
	lines := termScreen(t, raw)
	if last := lines[len(lines)-1]; last != "" {
		t.Errorf("the bar was left on the screen: %q", last)
	}
	var answers, logs int
	for _, l := range lines[:len(lines)-1] {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Errorf("a line on the screen is not whole: %q", l)
			continue
		}
		switch {
		case v["message"] == "evaluation":
			logs++
		case v["index"] != nil || v["summary"] != nil:
			answers++
		}
	}
	if answers != 5 || logs != 4 {
		t.Errorf("on the screen, %d answer lines and %d evaluation lines, want 5 and 4:\n%s", answers, logs, strings.Join(lines, "\n"))
	}
}
