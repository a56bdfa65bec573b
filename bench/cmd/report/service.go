package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/loom-plugins/sandbox-cloudrun/bench/loadresult"
)

type (
	serviceSummary = loadresult.Summary
	treeMem        = loadresult.TreeMem
)

func mib(kib int64) string { return fmt.Sprintf("%.1f", float64(kib)/1024) }

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m, _ := quantiles(xs)
	return m
}

// serviceTables renders the service's figures; cells gives the engine-level
// medians for the set-up estimate (pool=0 minus pool warm).
func serviceTables(w io.Writer, path string, cells map[string]map[string]*cell) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s serviceSummary
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if s.Baseline == nil {
		serviceTables1(w, &s, cells)
		return nil
	}
	compareTables(w, s.Baseline, &s)
	for _, x := range []*serviceSummary{s.Baseline, &s} {
		fmt.Fprintf(w, "### %s\n\n`%s`\n\n", x.Label, x.Version)
		serviceTables1(w, x, cells)
	}
	return nil
}

// serviceTables1 renders one binary's figures.
func serviceTables1(w io.Writer, s *serviceSummary, cells map[string]map[string]*cell) {
	if len(s.HTTP) > 0 {
		fmt.Fprintln(w, "#### Throughput and latency over HTTP (client side)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| configuration | clients | workload | requests | errors | 429 retried | req/s | p50 | p90 | p99 | p99.9 | max | p50 per round |")
		fmt.Fprintln(w, "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
		for _, c := range s.HTTP {
			wl := c.Workload
			if c.GapMs > 0 {
				wl += fmt.Sprintf(", paced (%.0f ms pause)", c.GapMs)
			}
			var rounds []string
			for _, x := range c.RoundP50 {
				rounds = append(rounds, ms(x))
			}
			cfg := fmt.Sprintf("%s (MAX_CONCURRENT_EVALUATIONS=%d, PROCESS_KILL=%v)", c.Config, c.MaxConcurrent, c.ProcessKill)
			fmt.Fprintf(w, "| %s | %d | %s | %d | %d | %d | %.0f | %s | %s | %s | %s | %s | %s |\n", cfg, c.Clients, wl,
				c.Requests, c.Errors, c.Refused, c.RPS, ms(c.P50), ms(c.P90), ms(c.P99), ms(c.P999), ms(c.Max), strings.Join(rounds, ", "))
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Milliseconds per request from the client's send to the last byte of the answer, closed loop (each client sends its next request when the answer is in), keep-alive connections; req/s is requests completed over the batches' wall time. Paced: the client pauses after each answer, so the pool of fresh instances is full when the next request comes.")
		fmt.Fprintln(w)

		fmt.Fprintln(w, "#### Where a request's time goes (medians, milliseconds)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| configuration | workload | client p50 | outside the handler (loopback, net/http, client) | handler: HTTP, JSON, effect | store fetch | evaluate (engine call) | engine set-up per instance, pool=0 − warm (off the request path when the pool is full) |")
		fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|")
		for _, c := range s.HTTP {
			if c.Logged == 0 {
				continue
			}
			wl := c.Workload
			if c.GapMs > 0 {
				wl += ", paced"
			}
			setup := "–"
			if byEngine := cells[c.Workload]; byEngine != nil && byEngine[engineWarm] != nil && byEngine[enginePool0] != nil {
				setup = ms(medianOf(byEngine[enginePool0].ms) - medianOf(byEngine[engineWarm].ms))
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s (p90 %s) | %s |\n", c.Config, wl, ms(c.P50),
				ms(max(0, c.P50-c.TotalP50)), ms(c.HandlerP50), ms(c.FetchP50), ms(c.EvaluateP50), ms(c.EvaluateP90), setup)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "From the service's own log line per evaluation (totalMs, fetchMs, evaluateMs): handler is the median of totalMs − fetchMs − evaluateMs per request (reading and decoding the body, the effect's checks and canonical JSON, encoding and the log line); outside the handler is the client's p50 minus the median totalMs. Evaluate is the engine call, which includes building an instance when the pool is empty. Set-up is the engine-level difference of medians from the table above.")
		fmt.Fprintln(w)
	}
	if len(s.Servers) > 0 {
		fmt.Fprintln(w, "Resident memory of the servers of the HTTP runs: "+strings.Join(func() []string {
			var out []string
			for _, sv := range s.Servers {
				line := fmt.Sprintf("%s: %s MiB idle after start, %s MiB at the end, peak (VmHWM) %s MiB", sv.Config, mib(sv.RSSIdle), mib(sv.RSSEnd), mib(sv.HWM))
				if a, b := sv.TreeIdle, sv.TreeEnd; a != nil && b != nil && (len(a.Procs) > 1 || len(b.Procs) > 1) {
					line += fmt.Sprintf(" (with its workers, %d processes: RSS %s MiB idle after start and %s MiB at the end, PSS %s and %s MiB)",
						len(b.Procs), mib(a.RSSKiB), mib(b.RSSKiB), mib(a.PSSKiB), mib(b.PSSKiB))
				}
				out = append(out, line)
			}
			return out
		}(), "; ")+".")
		fmt.Fprintln(w)
	}
	if len(s.Cold) > 0 {
		fmt.Fprintln(w, "#### Cold start: process start to the first successful evaluation")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| compilation cache | starts | first evaluation: median [min–max] | listening: median | engine warm (logged) | server VmRSS 1 s after the first evaluation: median [min–max] | server and workers: RSS, PSS (median), processes |")
		fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|")
		for _, cache := range []bool{true, false} {
			var first, listen, warm []float64
			var rss, treeRSS, treePSS, procs []float64
			for _, r := range s.Cold {
				if r.Cache != cache {
					continue
				}
				first = append(first, r.FirstEvalMs)
				listen = append(listen, r.ListenMs)
				warm = append(warm, r.WarmLoggedMs)
				rss = append(rss, float64(r.RSSIdleKiB))
				if r.Tree != nil {
					treeRSS = append(treeRSS, float64(r.Tree.RSSKiB))
					treePSS = append(treePSS, float64(r.Tree.PSSKiB))
					procs = append(procs, float64(len(r.Tree.Procs)))
				}
			}
			tree := "–"
			if len(treeRSS) > 0 {
				tree = fmt.Sprintf("%s, %s MiB, %.0f", mib(int64(medianOf(treeRSS))), mib(int64(medianOf(treePSS))), medianOf(procs))
			}
			if len(first) == 0 {
				continue
			}
			name := "none (compiles at start)"
			if cache {
				name = "baked (`compile-cache DIR`, `COMPILATION_CACHE_DIR=DIR`)"
			}
			fmt.Fprintf(w, "| %s | %d | %s ms [%s–%s] | %s ms | %s ms | %s MiB [%s–%s] | %s |\n", name, len(first),
				ms(medianOf(first)), ms(slices.Min(first)), ms(slices.Max(first)), ms(medianOf(listen)), ms(medianOf(warm)),
				mib(int64(medianOf(rss))), mib(int64(slices.Min(rss))), mib(int64(slices.Max(rss))), tree)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Baking the cache (`sandbox-cloudrun compile-cache DIR`, a fresh directory) took %s ms. Starts alternate with and without the cache; the clock runs from just before fork/exec to the end of the first 200 `{\"ok\":true…}` answer to the echo evaluation, which is sent as soon as the port accepts a connection (it waits for the compilation). Engine warm is the service's own log of compilation plus the first pool fill.\n", ms(s.CompileCacheMs))
		fmt.Fprintln(w)
	}
	if m := s.Memory; m != nil {
		fmt.Fprintln(w, "#### Resident memory over evaluations")
		fmt.Fprintln(w)
		cache := "without"
		if s.MemoryWithCache {
			cache = "with"
		}
		fmt.Fprintf(w, "A fresh server (the defaults, %s the baked compilation cache), %d evaluations one after the other, alternately echo and the 16 KiB reshape, in %.1f s (%d errors). Idle after start: VmRSS %s MiB, VmHWM %s MiB.\n\n",
			cache, m.Evaluations, m.Seconds, m.Errors, mib(m.RSSIdleKiB), mib(m.HWMIdleKiB))
		if m.Idle != nil {
			fmt.Fprintf(w, "The process tree (the server and its workers), after start-up and %d evaluations, settled:\n\n", m.IdleEvals)
			treeTable(w, m.Idle)
		}
		fmt.Fprintln(w, "| after evaluations | server VmRSS MiB | server VmHWM MiB | processes | tree RSS MiB | tree PSS MiB | tree VmHWM (sum) MiB |")
		fmt.Fprintln(w, "|--:|--:|--:|--:|--:|--:|--:|")
		for _, p := range m.Samples {
			fmt.Fprintf(w, "| %d | %s | %s | %d | %s | %s | %s |\n", p.After, mib(p.RSSKiB), mib(p.HWMKiB), p.Procs, mib(p.TreeRSSKiB), mib(p.TreePSSKiB), mib(p.TreeHWMKiB))
		}
		fmt.Fprintln(w)
	}
}
