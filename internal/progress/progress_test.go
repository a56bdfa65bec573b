package progress

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// meterAt is a meter of total begun at a fixed instant, whose clock reads
// elapsed after it.
func meterAt(total int, elapsed *time.Duration) *Meter {
	m := NewMeter(total)
	began := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.began, m.now = began, func() time.Time { return began.Add(*elapsed) }
	return m
}

// The rate is the inputs done a second since the start, the time left
// the inputs not done at that rate; before an input is done neither is
// known.
func TestFigures(t *testing.T) {
	elapsed := 10 * time.Second
	m := meterAt(100, &elapsed)
	if f := m.Figures(); f.Done != 0 || f.Total != 100 || f.Rate != 0 || f.Known || f.Percent() != 0 {
		t.Errorf("nothing done: %+v", f)
	}
	m.Add(40)
	if f := m.Figures(); f.Done != 40 || f.Rate != 4 || !f.Known || f.Left != 15*time.Second || f.Percent() != 40 {
		t.Errorf("40 of 100 in 10s: %+v, want 4/s and 15s left", f)
	}
	m.Add(60)
	if f := m.Figures(); f.Left != 0 || !f.Known || f.Percent() != 100 {
		t.Errorf("all done: %+v", f)
	}
	if f := NewMeter(0).Figures(); f.Percent() != 100 {
		t.Errorf("no inputs: %+v, %v%%", f, f.Percent())
	}
}

func TestRender(t *testing.T) {
	f := Figures{Done: 40, Total: 100, Rate: 12.34, Left: 4900 * time.Millisecond, Known: true}
	for _, tc := range []struct {
		f     Figures
		width int
		want  string
	}{
		{f, 80, " 40/100 [############..................]  40%  12.3/s  ETA 5s"},
		{f, 46, " 40/100 [#####.........]  40%  12.3/s  ETA 5s"},
		{Figures{Done: 996, Total: 1000, Rate: 100, Left: 40 * time.Millisecond, Known: true}, 60, " 996/1000 [##########################.]  99%  100/s  ETA 1s"},
		{f, 40, " 40/100  40%  12.3/s  ETA 5s"},
		{f, 20, " 40/100  40%  12.3/"},
		{Figures{Total: 7}, 80, "0/7 [..............................]   0%  0.00/s  ETA --"},
		{Figures{Done: 7, Total: 7, Rate: 1234.5, Known: true}, 80, "7/7 [##############################] 100%  1234/s  ETA 0s"},
		{Figures{Done: 1, Total: 1e6, Rate: 0.5, Left: 2*time.Hour + 7*time.Minute, Known: true}, 80, "      1/1000000 [..............................]   0%  0.50/s  ETA 2h07m"},
	} {
		got := Render(tc.f, tc.width)
		if got != tc.want {
			t.Errorf("Render(%+v, %d)\n got %q\nwant %q", tc.f, tc.width, got, tc.want)
		}
		if len(got) >= tc.width {
			t.Errorf("Render(%+v, %d) is %d columns: the cursor after it would wrap", tc.f, tc.width, len(got))
		}
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", time.Millisecond: "1s", 42 * time.Second: "42s", 185 * time.Second: "3m05s",
		3599 * time.Second: "59m59s", 2*time.Hour + 7*time.Minute + 30*time.Second: "2h07m",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

// screen is what a terminal shows after out: its lines, a carriage
// return going back to the line's start, erase-in-line erasing from the
// cursor to its end, a newline going to the next line's start (as a
// terminal's output processing turns \n into \r\n). It fails on any other
// control.
func screen(t *testing.T, out string) []string {
	t.Helper()
	lines := []string{""}
	col := 0
	for i := 0; i < len(out); i++ {
		cur := &lines[len(lines)-1]
		switch c := out[i]; {
		case c == '\r':
			col = 0
		case c == '\n':
			lines = append(lines, "")
			col = 0
		case strings.HasPrefix(out[i:], eraseLine):
			*cur = (*cur)[:col]
			i += len(eraseLine) - 1
		case c < ' ':
			t.Fatalf("control %q at %d of %q", c, i, out)
		default:
			if col < len(*cur) {
				*cur = (*cur)[:col] + string(c) + (*cur)[col+1:]
			} else {
				*cur += string(c)
			}
			col++
		}
	}
	return lines
}

// syncBuffer is a terminal several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The bar is drawn on the last line, redrawn in place; a line written
// through a Writer clears it first and has it drawn again below; Close
// leaves only the lines written.
func TestBarDrawsBelowTheLines(t *testing.T) {
	var term syncBuffer
	elapsed := 2 * time.Second
	m := meterAt(4, &elapsed)
	bar := NewBar(&term, m, 60, time.Hour) // drawn by the writes alone
	if got := screen(t, term.String()); len(got) != 1 || got[0] != Render(m.Figures(), 60) {
		t.Fatalf("at the start the screen is %q, want the bar alone", got)
	}
	w := bar.Writer(&term)
	m.Add(1)
	fmt.Fprintf(w, "first\n")
	m.Add(1)
	fmt.Fprintf(w, "second, ")
	if got := screen(t, term.String()); got[len(got)-1] != "second, " {
		t.Errorf("within a line the bar is not drawn: the screen is %q", got)
	}
	fmt.Fprintf(w, "whole\n")
	want := []string{"first", "second, whole", Render(m.Figures(), 60)}
	if got := screen(t, term.String()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the screen is\n%q\nwant\n%q", got, want)
	}
	if !strings.Contains(want[2], "2/4") || !strings.Contains(want[2], "ETA 2s") {
		t.Errorf("the bar says %q, want 2/4 and 2s left", want[2])
	}
	bar.Close()
	bar.Close()
	if got := screen(t, term.String()); strings.Join(got, "\n") != "first\nsecond, whole\n" {
		t.Errorf("once closed, the screen is %q, want the lines alone", got)
	}
}

// Lines written by several goroutines through Writers of the bar, as a
// log and an answer's stream write theirs while the bar is redrawn, are
// each whole on the screen, the bar in none of them.
func TestBarNeverInALine(t *testing.T) {
	var term syncBuffer
	m := NewMeter(400)
	bar := NewBar(&term, m, 70, time.Millisecond)
	var wg sync.WaitGroup
	for g := range 4 {
		w := bar.Writer(&term)
		wg.Go(func() {
			for i := range 100 {
				fmt.Fprintf(w, "writer %d line %d\n", g, i)
				m.Add(1)
			}
		})
	}
	wg.Wait()
	bar.Close()
	got := screen(t, term.String())
	if got[len(got)-1] != "" {
		t.Errorf("the last line is %q, want it empty", got[len(got)-1])
	}
	got = got[:len(got)-1]
	if len(got) != 400 {
		t.Errorf("%d lines on the screen, want 400", len(got))
	}
	for _, l := range got {
		var g, i int
		if n, err := fmt.Sscanf(l, "writer %d line %d", &g, &i); n != 2 || err != nil || l != fmt.Sprintf("writer %d line %d", g, i) {
			t.Errorf("a line on the screen is %q", l)
		}
	}
}

// Only a terminal is one: a buffer, a pipe and a file are not.
func TestTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(t.TempDir() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, out := range map[string]io.Writer{"a buffer": &bytes.Buffer{}, "a pipe": w, "a file": f} {
		if width, ok := Terminal(out); ok {
			t.Errorf("%s is taken for a terminal %d columns wide", name, width)
		}
	}
}

// LogEvery logs the figures every interval, each line's consistent with
// itself (the time left is the inputs not done at the rate), and nothing
// once stopped.
func TestLogEvery(t *testing.T) {
	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	m := NewMeter(50)
	stop := m.LogEvery(context.Background(), log, 5*time.Millisecond, "run progress", slog.Int("task", 3))
	for range 5 {
		time.Sleep(10 * time.Millisecond)
		m.Add(10)
	}
	deadline := time.Now().Add(time.Minute) // a line that counts all 50, however busy the machine
	for !strings.Contains(logs.String(), `"done":50`) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	n := strings.Count(logs.String(), "\n")
	time.Sleep(20 * time.Millisecond)
	if after := strings.Count(logs.String(), "\n"); after != n {
		t.Errorf("%d lines logged after stop", after-n)
	}
	var last int64
	for line := range strings.Lines(logs.String()) {
		var l struct {
			Msg                string
			Level              string
			Task               int
			Done, Total        int64
			Percent, PerSecond float64
			SecondsLeft        *int64
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		if l.Msg != "run progress" || l.Level != "INFO" || l.Task != 3 || l.Total != 50 || l.Done < last || l.Done > 50 {
			t.Errorf("line %s (after done %d)", line, last)
		}
		last = l.Done
		if l.Percent != float64(l.Done)*2 {
			t.Errorf("line %s: percent is not done of total", line)
		}
		switch {
		case l.Done == 0 && (l.SecondsLeft != nil || l.PerSecond != 0):
			t.Errorf("line %s: a rate or a time left before anything is done", line)
		case l.Done > 0 && (l.SecondsLeft == nil || l.PerSecond <= 0):
			t.Errorf("line %s: no rate or time left", line)
		case l.Done > 0:
			// secondsLeft is (total-done)/perSecond rounded up, perSecond rounded to 2 places
			want := float64(l.Total-l.Done) / l.PerSecond
			if d := float64(*l.SecondsLeft) - want; d < -1 || d > 1+want*0.01 {
				t.Errorf("line %s: secondsLeft %d, but %d inputs at %v/s take %.1fs", line, *l.SecondsLeft, l.Total-l.Done, l.PerSecond, want)
			}
		}
	}
	if last != 50 {
		t.Errorf("the last line says %d done, want 50:\n%s", last, logs.String())
	}
}
