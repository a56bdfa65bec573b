// Package progress says how far a run over a known number of inputs has
// come: done of the total, the rate since it began and the time left at
// that rate, as log lines at an interval (Meter.LogEvery: a bulk task's
// progress in its job's log) and as a bar on a terminal's last line (Bar:
// eval -inputs run by a person), never both on one stream.
package progress

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Meter counts the inputs done of a total, from the moment it was made.
// Its methods may be called from any goroutine.
type Meter struct {
	total int64
	began time.Time
	done  atomic.Int64
	now   func() time.Time // time.Now; a test's clock
}

// NewMeter is a meter of total inputs, none done, its clock started.
func NewMeter(total int) *Meter {
	return &Meter{total: int64(total), began: time.Now(), now: time.Now}
}

// Add counts n more inputs done.
func (m *Meter) Add(n int) { m.done.Add(int64(n)) }

// Figures are a meter's reading.
type Figures struct {
	Done, Total int64
	// Elapsed is the time since the meter began.
	Elapsed time.Duration
	// Rate is the inputs done a second since the meter began: 0 until one
	// is done.
	Rate float64
	// Left is the time the inputs not done would take at Rate; Known is
	// false until one is done, when nothing says how long one takes.
	Left  time.Duration
	Known bool
}

// Figures reads the meter.
func (m *Meter) Figures() Figures {
	f := Figures{Done: m.done.Load(), Total: m.total, Elapsed: m.now().Sub(m.began)}
	if f.Done > 0 && f.Elapsed > 0 {
		f.Rate = float64(f.Done) / f.Elapsed.Seconds()
		f.Left = time.Duration(float64(max(f.Total-f.Done, 0)) / f.Rate * float64(time.Second))
		f.Known = true
	}
	return f
}

// LogEvery logs the meter's figures at INFO under msg, with attrs first,
// every interval until stop is called (or ctx ends), so that a person
// reading a long run's log sees it go on, or see it stuck: done, total,
// percent, perSecond (2 decimals) and, once one input is done,
// secondsLeft (whole seconds, rounded up). No line is logged once stop
// has returned.
func (m *Meter) LogEvery(ctx context.Context, log *slog.Logger, interval time.Duration, msg string, attrs ...slog.Attr) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			f := m.Figures()
			line := append(attrs[:len(attrs):len(attrs)],
				slog.Int64("done", f.Done), slog.Int64("total", f.Total),
				slog.Float64("percent", round(f.Percent(), 1)), slog.Float64("perSecond", round(f.Rate, 2)))
			if f.Known {
				line = append(line, slog.Int64("secondsLeft", int64(math.Ceil(f.Left.Seconds()))))
			}
			log.LogAttrs(ctx, slog.LevelInfo, msg, line...)
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// Percent is the share of the total done, 0 to 100; 100 of no inputs.
func (f Figures) Percent() float64 {
	if f.Total <= 0 {
		return 100
	}
	return 100 * float64(f.Done) / float64(f.Total)
}

func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}
