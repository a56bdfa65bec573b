package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Providers are the tracer and meter providers the service passes explicitly
// to its parts (no global state).
type Providers struct {
	Tracer trace.TracerProvider
	Meter  metric.MeterProvider
	// Shutdown flushes and stops the exporters.
	Shutdown func(context.Context) error
}

// Exporter names accepted by Setup.
const (
	ExporterNone   = "none"
	ExporterStdout = "stdout"
	ExporterOTLP   = "otlp"
)

// Setup builds the providers for an exporter: "none" (no-op providers),
// "stdout" (spans and metrics written to w), or "otlp" (OTLP over HTTP,
// configured by the standard OTEL_EXPORTER_OTLP_* variables).
func Setup(ctx context.Context, exporter, service, version string, w io.Writer) (Providers, error) {
	noop := Providers{Tracer: tracenoop.NewTracerProvider(), Meter: metricnoop.NewMeterProvider(),
		Shutdown: func(context.Context) error { return nil }}
	var (
		se  sdktrace.SpanExporter
		me  sdkmetric.Exporter
		err error
	)
	switch exporter {
	case "", ExporterNone:
		return noop, nil
	case ExporterStdout:
		if se, err = stdouttrace.New(stdouttrace.WithWriter(w)); err == nil {
			me, err = stdoutmetric.New(stdoutmetric.WithWriter(w))
		}
	case ExporterOTLP:
		if se, err = otlptracehttp.New(ctx); err == nil {
			me, err = otlpmetrichttp.New(ctx)
		}
	default:
		return noop, fmt.Errorf("telemetry: unknown exporter %q (want none, stdout or otlp)", exporter)
	}
	if err != nil {
		return noop, fmt.Errorf("telemetry: %s exporter: %w", exporter, err)
	}
	res := resource.NewSchemaless(semconv.ServiceName(service), semconv.ServiceVersion(version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(se), sdktrace.WithResource(res))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me)), sdkmetric.WithResource(res))
	return Providers{
		Tracer: tp,
		Meter:  mp,
		Shutdown: func(ctx context.Context) error {
			return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
		},
	}, nil
}
