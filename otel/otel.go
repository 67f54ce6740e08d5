// Package otel reports what a reprise Engine does to OpenTelemetry: a span
// per lifecycle action, with an event per recorded step and a child span
// per hook run (and per hook in it), the hook run's trace context passed to
// command hooks as TRACEPARENT, and metrics of action latency, hook
// outcomes and append latency.
//
// It is a module of its own, so that reprise's other users never download
// OpenTelemetry. Wire it in through reprise.Options.Observer:
//
//	e := reprise.New(store, reprise.Options{Observer: otel.New(tp, mp)})
//
// The names of spans, attributes and metrics are listed in the module's
// README.md.
package otel

import (
	"cmp"
	"context"
	"errors"
	"time"

	global "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// ScopeName is the instrumentation scope of the tracer and meter New
// takes from its providers.
const ScopeName = "github.com/reprise-dev/reprise/otel"

// Span names. An action's span is "reprise." followed by the action, such
// as "reprise.restore"; a hook run's is HooksSpanPrefix followed by the
// event, such as "reprise.hooks.SessionStart".
const (
	ActionSpanPrefix = "reprise."
	HooksSpanPrefix  = "reprise.hooks."
	HookSpanName     = "reprise.hook" // one hook of a run
	StepEventName    = "reprise.step" // a span event on the action's span
)

// Metric names.
const (
	ActionDurationMetric = "reprise.restore.duration" // histogram, seconds, per action
	HookOutcomesMetric   = "reprise.hook.outcomes"    // counter, per event, status and kind
	AppendDurationMetric = "reprise.append.duration"  // histogram, seconds
)

// Attribute keys.
const (
	AgentKey   = attribute.Key("reprise.agent")
	ActionKey  = attribute.Key("reprise.action")
	SessionKey = attribute.Key("reprise.session")

	RestoreIDKey     = attribute.Key("reprise.restore.id")
	RestoreSourceKey = attribute.Key("reprise.restore.source")
	RestoreReasonKey = attribute.Key("reprise.restore.reason")
	RestoreFromKey   = attribute.Key("reprise.restore.from")
	RestoreToKey     = attribute.Key("reprise.restore.to")
	RestoreStepsKey  = attribute.Key("reprise.restore.steps")

	StepTypeKey     = attribute.Key("reprise.step.type")
	StepStreamKey   = attribute.Key("reprise.step.stream")
	StepSeqKey      = attribute.Key("reprise.step.seq")
	StepPositionKey = attribute.Key("reprise.step.position")

	// What a hook run matched on: the SessionStart source, the SessionEnd
	// reason or the PreCompact trigger.
	SourceKey  = attribute.Key("reprise.source")
	ReasonKey  = attribute.Key("reprise.reason")
	TriggerKey = attribute.Key("reprise.trigger")

	HookEventKey    = attribute.Key("reprise.hook.event")
	HookCountKey    = attribute.Key("reprise.hook.count")  // hooks in a run
	HookFailedKey   = attribute.Key("reprise.hook.failed") // hooks of a run whose status is not ok
	HookNameKey     = attribute.Key("reprise.hook.name")
	HookSourceKey   = attribute.Key("reprise.hook.source")  // where it was configured
	HookKindKey     = attribute.Key("reprise.hook.kind")    // "command" or "function"
	HookCommandKey  = attribute.Key("reprise.hook.command") // hookexec.CommandName: a long command by its digest
	HookStatusKey   = attribute.Key("reprise.hook.status")
	HookExitCodeKey = attribute.Key("reprise.hook.exit_code")
	HookDurationKey = attribute.Key("reprise.hook.duration") // seconds
	HookErrorKey    = attribute.Key("reprise.hook.error")
	HookDecisionKey = attribute.Key("reprise.hook.decision")

	// ErrorTypeKey classifies a failed action or append, as OpenTelemetry's
	// semantic conventions name it; see errorType.
	ErrorTypeKey = attribute.Key("error.type")
)

// Hook kinds, the values of HookKindKey: a Go function hook, or one of
// Claude Code's hook types (command, http, mcp_tool, prompt, agent).
const (
	KindCommand  = "command"
	KindFunction = "function"
)

// observer is the reprise.Observer New returns.
type observer struct {
	tracer         trace.Tracer
	propagator     propagation.TextMapPropagator
	actionDuration metric.Float64Histogram
	hookOutcomes   metric.Int64Counter
	appendDuration metric.Float64Histogram
}

// New returns a reprise.Observer that traces with tp and measures with mp;
// a nil provider means the global one (otel.GetTracerProvider,
// otel.GetMeterProvider), so that one set later is used too. It is safe
// for concurrent use.
func New(tp trace.TracerProvider, mp metric.MeterProvider) reprise.Observer {
	if tp == nil {
		tp = global.GetTracerProvider()
	}
	if mp == nil {
		mp = global.GetMeterProvider()
	}
	meter := mp.Meter(ScopeName)
	o := &observer{tracer: tp.Tracer(ScopeName), propagator: propagation.TraceContext{}}
	var err error
	o.actionDuration, err = meter.Float64Histogram(ActionDurationMetric, metric.WithUnit("s"),
		metric.WithDescription("How long a lifecycle action (start, restore, new, clear, fork, compact, end, stop, prompt, continue) took."),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600))
	if err != nil {
		global.Handle(err)
		o.actionDuration = metricnoop.Float64Histogram{}
	}
	o.hookOutcomes, err = meter.Int64Counter(HookOutcomesMetric, metric.WithUnit("{outcome}"),
		metric.WithDescription("Hooks run, by event, outcome status and kind."))
	if err != nil {
		global.Handle(err)
		o.hookOutcomes = metricnoop.Int64Counter{}
	}
	o.appendDuration, err = meter.Float64Histogram(AppendDurationMetric, metric.WithUnit("s"),
		metric.WithDescription("How long an append to the event log took."),
		metric.WithExplicitBucketBoundaries(0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
	if err != nil {
		global.Handle(err)
		o.appendDuration = metricnoop.Float64Histogram{}
	}
	return o
}

// Action starts the action's span; its end records the restore, the
// error and the action's duration.
func (o *observer) Action(ctx context.Context, agent, action, session string) (context.Context, func(*reprise.Transition, error)) {
	began := time.Now()
	ctx, span := o.tracer.Start(ctx, ActionSpanPrefix+action, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(began),
		trace.WithAttributes(AgentKey.String(agent), ActionKey.String(action), SessionKey.String(session)))
	return ctx, func(r *reprise.Transition, err error) {
		if r != nil {
			attrs := []attribute.KeyValue{RestoreIDKey.String(r.ID), RestoreFromKey.String(r.From),
				RestoreToKey.String(r.To), RestoreStepsKey.Int(len(r.Steps))}
			if r.Source != "" {
				attrs = append(attrs, RestoreSourceKey.String(string(r.Source)))
			}
			if r.EndReason != "" {
				attrs = append(attrs, RestoreReasonKey.String(string(r.EndReason)))
			}
			span.SetAttributes(attrs...)
		}
		metricAttrs := []attribute.KeyValue{ActionKey.String(action)}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			metricAttrs = append(metricAttrs, ErrorTypeKey.String(errorType(err)))
		}
		ended := time.Now()
		span.End(trace.WithTimestamp(ended))
		o.actionDuration.Record(ctx, ended.Sub(began).Seconds(), metric.WithAttributes(metricAttrs...))
	}
}

// Step adds an event to the span of the action that recorded ev.
func (o *observer) Step(ctx context.Context, ev eventlog.Event) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{StepTypeKey.String(string(ev.Type)), StepStreamKey.String(ev.Stream),
		StepSeqKey.Int64(int64(ev.Seq)), StepPositionKey.Int64(int64(ev.Position))}
	if ev.RestoreID != "" {
		attrs = append(attrs, RestoreIDKey.String(ev.RestoreID))
	}
	span.AddEvent(StepEventName, trace.WithAttributes(attrs...))
}

// Hooks starts the run's span and gives command hooks its trace context;
// its end adds a child span per hook and counts the outcomes.
func (o *observer) Hooks(ctx context.Context, event hookexec.Event, session, value string, hooks []hookexec.Hook) (context.Context, []string, func([]schema.HookOutcome)) {
	attrs := []attribute.KeyValue{HookEventKey.String(string(event)), SessionKey.String(session), HookCountKey.Int(len(hooks))}
	if value != "" {
		switch event {
		case hookexec.SessionStart:
			attrs = append(attrs, SourceKey.String(value))
		case hookexec.SessionEnd:
			attrs = append(attrs, ReasonKey.String(value))
		case hookexec.PreCompact:
			attrs = append(attrs, TriggerKey.String(value))
		}
	}
	began := time.Now()
	ctx, span := o.tracer.Start(ctx, HooksSpanPrefix+string(event), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(began), trace.WithAttributes(attrs...))
	env := o.environment(ctx)
	hooks = append([]hookexec.Hook(nil), hooks...) // the caller's slice may change after we return
	return ctx, env, func(outcomes []schema.HookOutcome) {
		failed := 0
		for i, out := range outcomes {
			var h *hookexec.Hook
			if i < len(hooks) {
				h = &hooks[i]
			}
			if out.Status != schema.HookOK {
				failed++
			}
			o.outcome(ctx, event, began, h, out)
		}
		span.SetAttributes(HookFailedKey.Int(failed))
		span.End()
	}
}

// environment is what command hooks get to join the trace of ctx:
// TRACEPARENT, and TRACESTATE when there is one; nil when ctx has no valid
// span context.
func (o *observer) environment(ctx context.Context) []string {
	carrier := propagation.MapCarrier{}
	o.propagator.Inject(ctx, carrier)
	var env []string
	if tp := carrier.Get("traceparent"); tp != "" {
		env = append(env, "TRACEPARENT="+tp)
	}
	if ts := carrier.Get("tracestate"); ts != "" {
		env = append(env, "TRACESTATE="+ts)
	}
	return env
}

// outcome records out, the outcome of h (nil when unknown), as a child span
// of the run in ctx, which began at began, and counts it.
func (o *observer) outcome(ctx context.Context, event hookexec.Event, began time.Time, h *hookexec.Hook, out schema.HookOutcome) {
	kind := ""
	if h != nil {
		kind = cmp.Or(string(h.Type()), KindFunction) // command, http, mcp_tool, prompt or agent
	}
	o.hookOutcomes.Add(ctx, 1, metric.WithAttributes(HookEventKey.String(string(event)),
		HookStatusKey.String(out.Status), HookKindKey.String(kind)))
	if !trace.SpanFromContext(ctx).IsRecording() {
		return
	}
	took := time.Duration(out.Duration)
	attrs := []attribute.KeyValue{HookEventKey.String(string(event)), HookNameKey.String(out.Name),
		HookSourceKey.String(out.Source), HookStatusKey.String(out.Status), HookDurationKey.Float64(took.Seconds())}
	if kind != "" {
		attrs = append(attrs, HookKindKey.String(kind))
	}
	if kind == KindCommand {
		attrs = append(attrs, HookCommandKey.String(hookexec.CommandName(h.CommandLine())), HookExitCodeKey.Int(out.ExitCode))
	} else if out.ExitCode != 0 {
		attrs = append(attrs, HookExitCodeKey.Int(out.ExitCode))
	}
	if out.Error != "" {
		attrs = append(attrs, HookErrorKey.String(out.Error))
	}
	if out.Decision != "" {
		attrs = append(attrs, HookDecisionKey.String(out.Decision))
	}
	// Hooks of a run start together; the outcome says how long each ran.
	_, span := o.tracer.Start(ctx, HookSpanName, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(began), trace.WithAttributes(attrs...))
	if out.Status != schema.HookOK {
		desc := out.Status
		if out.Error != "" {
			desc += ": " + out.Error
			span.RecordError(errors.New(out.Error), trace.WithTimestamp(began.Add(took)))
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End(trace.WithTimestamp(began.Add(took)))
}

// Appended records the append's duration.
func (o *observer) Appended(ctx context.Context, records int, took time.Duration, err error) {
	if err == nil {
		o.appendDuration.Record(ctx, took.Seconds())
		return
	}
	o.appendDuration.Record(ctx, took.Seconds(), metric.WithAttributes(ErrorTypeKey.String(errorType(err))))
}

// errorType classifies err for the error.type attribute, keeping its
// values few: reprise's and the event log's errors by name, "_OTHER" for
// the rest.
func errorType(err error) string {
	for _, known := range []struct {
		err  error
		name string
	}{
		{reprise.ErrSessionNotFound, "session_not_found"},
		{reprise.ErrAgentBusy, "restore_in_progress"},
		{reprise.ErrCompactionBlocked, "compaction_blocked"},
		{reprise.ErrNoCurrentSession, "no_current_session"},
		{reprise.ErrNoDirectory, "no_directory"},
		{reprise.ErrInvalidID, "invalid_id"},
		{reprise.ErrInvalidMessage, "invalid_message"},
		{reprise.ErrSessionExists, "session_exists"},
		{eventlog.ErrConflict, "conflict"},
		{eventlog.ErrBusy, "busy"},
		{eventlog.ErrLocked, "locked"},
		{eventlog.ErrClosed, "closed"},
		{eventlog.ErrReadOnly, "read_only"},
		{eventlog.ErrCorrupt, "corrupt"},
		{context.Canceled, "canceled"},
		{context.DeadlineExceeded, "deadline_exceeded"},
	} {
		if errors.Is(err, known.err) {
			return known.name
		}
	}
	return "_OTHER"
}
