package main

import (
	"fmt"
	"io"
	"math"
)

// treeTable lists a process tree, one row per process and the totals.
func treeTable(w io.Writer, t *treeMem) {
	fmt.Fprintln(w, "| process | pid | VmRSS MiB | PSS MiB | PSS anonymous MiB | PSS file-backed MiB | VmHWM MiB |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|")
	for _, p := range t.Procs {
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s |\n", p.Role, p.Pid, mib(p.RSSKiB), mib(p.PSSKiB), mib(p.PSSAnonKiB), mib(p.PSSFileKiB), mib(p.HWMKiB))
	}
	fmt.Fprintf(w, "| **total** (%d processes) | | **%s** | **%s** | %s | %s | %s |\n", len(t.Procs), mib(t.RSSKiB), mib(t.PSSKiB), mib(t.PSSAnonKiB), mib(t.PSSFileKiB), mib(t.HWMKiB))
	fmt.Fprintln(w)
}

// compareTables sets two binaries measured in one run side by side: a is
// the baseline ("before"), b the binary under test ("after").
func compareTables(w io.Writer, a, b *serviceSummary) {
	fmt.Fprintf(w, "#### %s against %s, measured side by side in one run\n\n", b.Label, a.Label)
	fmt.Fprintf(w, "- %s: `%s` (`version`)\n- %s: `%s`\n", a.Label, a.Version, b.Label, b.Version)
	if len(b.LoadAvg) == 2 {
		fmt.Fprintf(w, "- load average (1, 5, 15 min) at the start: %s; at the end: %s\n", b.LoadAvg[0], b.LoadAvg[1])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "| measure | %s | %s | %s − %s | %s / %s |\n", a.Label, b.Label, b.Label, a.Label, b.Label, a.Label)
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|")
	row := func(name, unit string, x, y float64, format func(float64) string) {
		d := format(math.Abs(y - x))
		if y < x {
			d = "−" + d
		} else {
			d = "+" + d
		}
		fmt.Fprintf(w, "| %s | %s%s | %s%s | %s%s | %s |\n", name, format(x), unit, format(y), unit, d, unit, ratio(y, x))
	}
	for _, cb := range b.HTTP {
		var ca *struct{ p50, p99, rps, eval, handler, outside float64 }
		for _, c := range a.HTTP {
			if c.Config == cb.Config && c.Workload == cb.Workload && c.GapMs == cb.GapMs {
				ca = &struct{ p50, p99, rps, eval, handler, outside float64 }{c.P50, c.P99, c.RPS, c.EvaluateP50, c.HandlerP50, max(0, c.P50-c.TotalP50)}
			}
		}
		if ca == nil {
			continue
		}
		name := cb.Config + ", " + cb.Workload
		if cb.GapMs > 0 {
			name += fmt.Sprintf(", paced (%.0f ms pause)", cb.GapMs)
		} else {
			name += ", back to back"
		}
		row(name+": p50", " ms", ca.p50, cb.P50, ms)
		row(name+": p99", " ms", ca.p99, cb.P99, ms)
		row(name+": requests/s", "", ca.rps, cb.RPS, func(x float64) string { return fmt.Sprintf("%.0f", x) })
		if cb.Logged > 0 {
			row(name+": evaluate (logged, p50)", " ms", ca.eval, cb.EvaluateP50, ms)
			row(name+": handler without evaluate (logged, p50)", " ms", ca.handler, cb.HandlerP50, ms)
			row(name+": outside the handler (client p50 − logged total p50)", " ms", ca.outside, max(0, cb.P50-cb.TotalP50), ms)
		}
	}
	for _, cache := range []bool{true, false} {
		fa, fb := coldFirst(a, cache), coldFirst(b, cache)
		if len(fa) == 0 || len(fb) == 0 {
			continue
		}
		name := "cold start to the first evaluation, baked cache: median"
		if !cache {
			name = "cold start to the first evaluation, no cache: median"
		}
		row(name, " ms", medianOf(fa), medianOf(fb), ms)
	}
	if a.Memory != nil && b.Memory != nil && a.Memory.Idle != nil && b.Memory.Idle != nil {
		mrow := func(name string, x, y int64) {
			d := "+" + mib(y-x)
			if y < x {
				d = "−" + mib(x-y)
			}
			r := "–" // a ratio of growths is meaningless when the baseline did not grow
			if x > 0 && y >= 0 {
				r = ratio(float64(y), float64(x))
			}
			fmt.Fprintf(w, "| %s | %s MiB | %s MiB | %s MiB | %s |\n", name, smib(x), smib(y), d, r)
		}
		mrow(fmt.Sprintf("idle RSS, server + workers (%d and %d processes)", len(a.Memory.Idle.Procs), len(b.Memory.Idle.Procs)), a.Memory.Idle.RSSKiB, b.Memory.Idle.RSSKiB)
		mrow("idle PSS, server + workers", a.Memory.Idle.PSSKiB, b.Memory.Idle.PSSKiB)
		if na, nb := len(a.Memory.Samples), len(b.Memory.Samples); na > 0 && nb > 0 {
			la, lb := a.Memory.Samples[na-1], b.Memory.Samples[nb-1]
			mrow(fmt.Sprintf("RSS, server + workers, after %d evaluations", lb.After), la.TreeRSSKiB, lb.TreeRSSKiB)
			mrow(fmt.Sprintf("PSS, server + workers, after %d evaluations", lb.After), la.TreePSSKiB, lb.TreePSSKiB)
			mrow(fmt.Sprintf("growth of the RSS, idle → %d evaluations", lb.After), la.TreeRSSKiB-a.Memory.Idle.RSSKiB, lb.TreeRSSKiB-b.Memory.Idle.RSSKiB)
			mrow(fmt.Sprintf("growth of the PSS, idle → %d evaluations", lb.After), la.TreePSSKiB-a.Memory.Idle.PSSKiB, lb.TreePSSKiB-b.Memory.Idle.PSSKiB)
			fa, fb := a.Memory.Samples[0], b.Memory.Samples[0]
			mrow(fmt.Sprintf("growth of the RSS, %d → %d evaluations", fb.After, lb.After), la.TreeRSSKiB-fa.TreeRSSKiB, lb.TreeRSSKiB-fb.TreeRSSKiB)
			mrow("peak (sum of VmHWM) over the run", la.TreeHWMKiB, lb.TreeHWMKiB)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Each HTTP cell ran for both binaries in every round, one right after the other, the binary that went first alternating; the cold starts alternated between the binaries as well as between with and without the cache. Memory is the whole process tree (the server and its worker processes), idle after start-up and a few evaluations, settled; PSS divides the pages the processes share (the binary's text) among them, RSS counts them in each.")
	fmt.Fprintln(w)
	if a.Memory != nil && b.Memory != nil && a.Memory.Idle != nil && b.Memory.Idle != nil {
		for _, x := range []*serviceSummary{a, b} {
			fmt.Fprintf(w, "Idle, %s (after start-up and %d evaluations, settled):\n\n", x.Label, x.Memory.IdleEvals)
			treeTable(w, x.Memory.Idle)
		}
	}
}

func coldFirst(s *serviceSummary, cache bool) []float64 {
	var out []float64
	for _, r := range s.Cold {
		if r.Cache == cache {
			out = append(out, r.FirstEvalMs)
		}
	}
	return out
}

// smib is mib for a figure that may be negative (a growth).
func smib(kib int64) string {
	if kib < 0 {
		return "−" + mib(-kib)
	}
	return mib(kib)
}
