package handler

import (
	"context"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// metrics are the service's own instruments (otelhttp adds the generic HTTP
// server ones).
type metrics struct {
	evaluations metric.Int64Counter
	duration    metric.Float64Histogram
	busy        metric.Int64Counter
	faults      metric.Int64Counter
	// what each run used (docs/spi.md, "Usage")
	phase, cpu              metric.Float64Histogram
	peakMemory              metric.Int64Histogram
	memoryUse, cpuBudgetUse metric.Float64Histogram
}

func newMetrics(mp metric.MeterProvider, cacheStats func() (hits, misses uint64), compiledStats func() (hits, misses, evictions uint64)) (*metrics, error) {
	m := mp.Meter(instrumentationName)
	var ms metrics
	var err error
	if ms.evaluations, err = m.Int64Counter("sandbox.evaluations",
		metric.WithDescription("Evaluation requests, by route and outcome (ok, a channel, an SPI outcome kind, or a problem type)."),
		metric.WithUnit("{evaluation}")); err != nil {
		return nil, err
	}
	if ms.duration, err = m.Float64Histogram("sandbox.evaluation.duration",
		metric.WithDescription("Time to answer an evaluation request, by route and outcome."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)); err != nil {
		return nil, err
	}
	if ms.phase, err = m.Float64Histogram("sandbox.run.phase.duration",
		metric.WithDescription("Wall time of each phase of a run (fetch, verify, setup, compile, run, serialise), by route and phase."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)); err != nil {
		return nil, err
	}
	if ms.cpu, err = m.Float64Histogram("sandbox.run.cpu",
		metric.WithDescription("Processor time of a run in its engine, by route."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)); err != nil {
		return nil, err
	}
	if ms.peakMemory, err = m.Int64Histogram("sandbox.run.memory.peak",
		metric.WithDescription("The most a run's guest heap held at once, by route."),
		metric.WithUnit("By"),
		metric.WithExplicitBucketBoundaries(256<<10, 1<<20, 4<<20, 16<<20, 64<<20, 128<<20, 256<<20, 1<<30)); err != nil {
		return nil, err
	}
	if ms.memoryUse, err = m.Float64Histogram("sandbox.run.memory.utilization",
		metric.WithDescription("A run's peak heap as a fraction of its memory limit, by route."),
		metric.WithUnit("1"),
		metric.WithExplicitBucketBoundaries(0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 1)); err != nil {
		return nil, err
	}
	if ms.cpuBudgetUse, err = m.Float64Histogram("sandbox.run.cpu_budget.utilization",
		metric.WithDescription("The CPU budget a run used, as a fraction of its budget, by route."),
		metric.WithUnit("1"),
		metric.WithExplicitBucketBoundaries(0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1)); err != nil {
		return nil, err
	}
	if ms.busy, err = m.Int64Counter("sandbox.busy_rejections",
		metric.WithDescription("Evaluation requests refused with 429 because the instance was at its concurrency limit."),
		metric.WithUnit("{request}")); err != nil {
		return nil, err
	}
	if ms.faults, err = m.Int64Counter("sandbox.engine.faults",
		metric.WithDescription("Evaluations whose engine was broken from inside by the script (a wasm trap), each answered as infrastructure and logged at ERROR as an engine fault, by route."),
		metric.WithUnit("{fault}")); err != nil {
		return nil, err
	}
	if cacheStats != nil {
		hits, err := m.Int64ObservableCounter("sandbox.script_cache.hits",
			metric.WithDescription("Script fetches answered from the cache of verified bytes."), metric.WithUnit("{fetch}"))
		if err != nil {
			return nil, err
		}
		misses, err := m.Int64ObservableCounter("sandbox.script_cache.misses",
			metric.WithDescription("Script fetches that went to the store."), metric.WithUnit("{fetch}"))
		if err != nil {
			return nil, err
		}
		if _, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			h, mi := cacheStats()
			o.ObserveInt64(hits, int64(h))
			o.ObserveInt64(misses, int64(mi))
			return nil
		}, hits, misses); err != nil {
			return nil, err
		}
	}
	if compiledStats != nil {
		var counters [3]metric.Int64ObservableCounter
		for i, c := range []struct{ name, desc, unit string }{
			{"sandbox.compiled_scripts.hits", "Runs that started from their script as an earlier run's compile left it, without compiling it.", "{run}"},
			{"sandbox.compiled_scripts.misses", "Runs that compiled their script, and kept the compile for the script's later runs.", "{run}"},
			{"sandbox.compiled_scripts.evictions", "Kept compiles of scripts dropped, the least recently used first, to keep within COMPILED_SCRIPT_BYTES.", "{script}"},
		} {
			if counters[i], err = m.Int64ObservableCounter(c.name, metric.WithDescription(c.desc), metric.WithUnit(c.unit)); err != nil {
				return nil, err
			}
		}
		if _, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			h, mi, ev := compiledStats()
			o.ObserveInt64(counters[0], int64(h))
			o.ObserveInt64(counters[1], int64(mi))
			o.ObserveInt64(counters[2], int64(ev))
			return nil
		}, counters[0], counters[1], counters[2]); err != nil {
			return nil, err
		}
	}
	return &ms, nil
}

// evaluation counts an evaluation request under its label, with the time
// it took to answer.
func (m *metrics) evaluation(ctx context.Context, route string, l answer.Label, d time.Duration) {
	attrs := []attribute.KeyValue{attribute.String("route", route), attribute.String("outcome", l.Outcome)}
	if l.Limit != "" {
		attrs = append(attrs, attribute.String("limit", l.Limit))
	}
	set := metric.WithAttributes(attrs...)
	m.evaluations.Add(ctx, 1, set)
	m.duration.Record(ctx, d.Seconds(), set)
}

// usage records what one run used.
func (m *metrics) usage(ctx context.Context, route string, u spi.Usage) {
	r := attribute.String("route", route)
	for _, p := range u.Phases() {
		m.phase.Record(ctx, p.D.Seconds(), metric.WithAttributes(r, attribute.String("phase", p.Name)))
	}
	set := metric.WithAttributes(r)
	m.cpu.Record(ctx, u.CPU.Seconds(), set)
	m.peakMemory.Record(ctx, u.PeakMemoryBytes, set)
	if f, ok := u.MemoryUse(); ok {
		m.memoryUse.Record(ctx, f, set)
	}
	if f, ok := u.CPUBudgetUse(); ok {
		m.cpuBudgetUse.Record(ctx, f, set)
	}
}

func (m *metrics) busyRejection(ctx context.Context, route string) {
	m.busy.Add(ctx, 1, metric.WithAttributes(attribute.String("route", route)))
}

func (m *metrics) engineFault(ctx context.Context, route string) {
	m.faults.Add(ctx, 1, metric.WithAttributes(attribute.String("route", route)))
}
