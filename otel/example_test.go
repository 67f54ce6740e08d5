package otel_test

import (
	"context"
	"fmt"
	"os"
	"slices"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/otel"
)

// Example traces an Engine's actions and hooks. A program would give the
// tracer provider an exporter (sdktrace.WithBatcher of an OTLP exporter)
// and the meter provider a periodic reader; here a span recorder shows
// what is traced.
func Example() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(ctx)
	mp := sdkmetric.NewMeterProvider()
	defer mp.Shutdown(ctx)

	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Observer: otel.New(tp, mp)})
	defer e.Close()
	// A command hook's own spans join the trace: it gets TRACEPARENT.
	e.Hooks().Add(hookexec.Hook{Event: hookexec.SessionStart,
		Body: hookexec.Command{Line: `echo "hook of trace $(echo "$TRACEPARENT" | cut -d- -f2)"`}})

	id, _ := e.CreateSession(ctx, "design", os.TempDir())
	agent, _ := e.Agent(ctx, "ide")
	r, _ := agent.Start(ctx, id)

	var names []string
	for _, s := range spans.Ended() {
		names = append(names, s.Name())
		if s.Name() == "reprise.start" {
			fmt.Println(r.Context == "hook of trace "+s.SpanContext().TraceID().String())
		}
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output:
	// true
	// [reprise.hook reprise.hooks.SessionStart reprise.start]
}
