package handler

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// metrics are the service's own instruments (otelhttp adds the generic HTTP
// server ones).
type metrics struct {
	evaluations metric.Int64Counter
	duration    metric.Float64Histogram
	busy        metric.Int64Counter
}

func newMetrics(mp metric.MeterProvider, cacheStats func() (hits, misses uint64)) (*metrics, error) {
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
	if ms.busy, err = m.Int64Counter("sandbox.busy_rejections",
		metric.WithDescription("Evaluation requests refused with 429 because the instance was at its concurrency limit."),
		metric.WithUnit("{request}")); err != nil {
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
	return &ms, nil
}

func (m *metrics) evaluation(ctx context.Context, route, outcome, limit string, d time.Duration) {
	attrs := []attribute.KeyValue{attribute.String("route", route), attribute.String("outcome", outcome)}
	if limit != "" {
		attrs = append(attrs, attribute.String("limit", limit))
	}
	set := metric.WithAttributes(attrs...)
	m.evaluations.Add(ctx, 1, set)
	m.duration.Record(ctx, d.Seconds(), set)
}

func (m *metrics) busyRejection(ctx context.Context, route string) {
	m.busy.Add(ctx, 1, metric.WithAttributes(attribute.String("route", route)))
}
