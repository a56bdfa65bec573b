package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// The terminal's controls the bar uses: a carriage return goes back to
// the line's start, and erase-in-line (ECMA-48 EL, CSI K) erases from the
// cursor to the line's end, so that a shorter bar leaves nothing of a
// longer one and a cleared bar leaves the line empty.
const (
	carriageReturn = "\r"
	eraseLine      = "\x1b[K"
	clearBar       = carriageReturn + eraseLine
)

// Bar draws a meter's figures on a terminal's last line, redrawn in place
// every interval: done/total, a bar, the percent, the rate and the time
// left. Everything else bound for the same terminal must be written
// through the bar's Writer: each write first clears the bar, and the bar
// is drawn again below a whole line, so that no line is written over or
// after it. Close clears it for good.
type Bar struct {
	mu     sync.Mutex
	term   io.Writer
	m      *Meter
	width  int
	shown  bool // the bar is on the terminal's last line
	inLine bool // the last write through a Writer did not end its line
	closed bool

	stop chan struct{}
	done chan struct{}
}

// NewBar draws m on term, a terminal width columns wide (Terminal says
// whether a writer is one, and its width), now and then every interval
// until Close.
func NewBar(term io.Writer, m *Meter, width int, interval time.Duration) *Bar {
	b := &Bar{term: term, m: m, width: width, stop: make(chan struct{}), done: make(chan struct{})}
	b.mu.Lock()
	b.draw()
	b.mu.Unlock()
	go func() {
		defer close(b.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-t.C:
			}
			b.mu.Lock()
			b.draw()
			b.mu.Unlock()
		}
	}()
	return b
}

// Close stops the drawing and clears the bar, leaving the cursor at the
// start of an empty line. It may be called more than once.
func (b *Bar) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	close(b.stop)
	b.hide()
	b.mu.Unlock()
	<-b.done
}

// Writer is w, which writes to the bar's terminal (the terminal itself,
// or another stream shown on it, as standard output is beside standard
// error), with the bar cleared before each write and drawn again after
// one that ends a line.
func (b *Bar) Writer(w io.Writer) io.Writer { return barWriter{b, w} }

type barWriter struct {
	b *Bar
	w io.Writer
}

func (bw barWriter) Write(p []byte) (int, error) {
	b := bw.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hide()
	n, err := bw.w.Write(p)
	if n > 0 {
		b.inLine = p[n-1] != '\n'
	}
	b.draw()
	return n, err
}

// hide clears the bar if it is shown; b.mu is held.
func (b *Bar) hide() {
	if b.shown {
		io.WriteString(b.term, clearBar)
		b.shown = false
	}
}

// draw draws the bar over itself, unless a line is being written (the bar
// would be written into it) or the bar is closed; b.mu is held.
func (b *Bar) draw() {
	if b.closed || b.inLine {
		return
	}
	io.WriteString(b.term, carriageReturn+Render(b.m.Figures(), b.width)+eraseLine)
	b.shown = true
}

// Render is the bar's text for f on a terminal width columns wide, at
// most width-1 of them, so that the cursor after it never wraps:
//
//	40/100 [#########.............]  40%  12.3/s  ETA 5s
//
// The bar narrows, then goes, on a narrow terminal; the rest is cut to
// fit.
func Render(f Figures, width int) string {
	count := fmt.Sprintf("%*d/%d", len(fmt.Sprint(f.Total)), f.Done, f.Total)
	eta := "ETA --"
	if f.Known {
		eta = "ETA " + Duration(f.Left)
	}
	// floored: 100% is all done
	rest := fmt.Sprintf(" %3d%%  %s/s  %s", int(f.Percent()), rate(f.Rate), eta)
	room := width - 1 - len(count) - len(rest) - 3 // " [" and "]"
	if room >= 10 {
		cells := min(room, 30)
		full := int(float64(cells) * f.Percent() / 100)
		return count + " [" + strings.Repeat("#", full) + strings.Repeat(".", cells-full) + "]" + rest
	}
	s := count + rest
	if len(s) > width-1 {
		s = s[:max(width-1, 0)]
	}
	return s
}

// rate writes inputs a second with 3 significant figures, at least.
func rate(r float64) string {
	switch {
	case r < 10:
		return fmt.Sprintf("%.2f", r)
	case r < 100:
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.0f", r)
}

// Duration writes d to the second, as a person reads a time left: 42s,
// 3m05s, 2h07m.
func Duration(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second) // rounded up: never "0s" with work left
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
}
