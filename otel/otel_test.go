package otel_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	global "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	rotel "github.com/reprise-dev/reprise/otel"
	"github.com/reprise-dev/reprise/schema"
)

// telemetry is an SDK tracer and meter provider recording in memory.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newTelemetry(t *testing.T) *telemetry {
	t.Helper()
	tel := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	t.Cleanup(func() {
		_ = tel.tp.Shutdown(context.Background())
		_ = tel.mp.Shutdown(context.Background())
	})
	return tel
}

// named returns the ended spans called name, in the order they ended.
func (tel *telemetry) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// children returns the ended spans whose parent is parent.
func (tel *telemetry) children(parent sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() && s.Parent().TraceID() == parent.SpanContext().TraceID() {
			out = append(out, s)
		}
	}
	return out
}

// metrics collects what the reader holds, by metric name.
func (tel *telemetry) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != rotel.ScopeName {
			t.Errorf("metrics under scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// want checks that kvs has each of want's attributes, with its value.
func want(t *testing.T, what string, kvs map[attribute.Key]attribute.Value, want ...attribute.KeyValue) {
	t.Helper()
	for _, w := range want {
		got, ok := kvs[w.Key]
		if !ok {
			t.Errorf("%s: no attribute %s (want %s)", what, w.Key, w.Value.String())
		} else if got != w.Value {
			t.Errorf("%s: %s = %s, want %s", what, w.Key, got.String(), w.Value.String())
		}
	}
}

// traceparent is the W3C traceparent of s.
func traceparent(s sdktrace.ReadOnlySpan) string {
	sc := s.SpanContext()
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// childOf fails t unless s is a child of parent.
func childOf(t *testing.T, s, parent sdktrace.ReadOnlySpan) {
	t.Helper()
	if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.Parent().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("%s's parent is %s, want %s (%s)", s.Name(), s.Parent().SpanID(), parent.Name(), parent.SpanContext().SpanID())
	}
}

// TestEngineIsTraced runs a real Engine through a start, a restore and a
// refused restore, with a command hook that prints its TRACEPARENT, one
// that exits 3 and a Go function hook, and checks the spans and metrics.
func TestEngineIsTraced(t *testing.T) {
	ctx := t.Context()
	tel := newTelemetry(t)
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{
		Files: reprise.NewMemoryFiles(), Logger: slog.New(slog.DiscardHandler), Observer: rotel.New(tel.tp, tel.mp)})
	defer e.Close()
	for _, id := range []string{"a", "b"} {
		if _, err := e.CreateSession(ctx, id, t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Append(ctx, "a", reprise.Text("user", "hello")); err != nil {
		t.Fatal(err)
	}
	echo := `echo "$TRACEPARENT"`
	fail := `echo broken >&2; exit 3`
	for _, h := range []hookexec.Hook{
		{Event: hookexec.SessionStart, Body: hookexec.Command{Line: echo}},
		{Event: hookexec.SessionStart, Name: "go-hook", Source: "function",
			Body: hookexec.SessionStartFunc(func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
				return hookexec.SessionStartOutput{}, nil
			})},
		{Event: hookexec.SessionEnd, Body: hookexec.Command{Line: fail}},
	} {
		if err := e.Hooks().Add(h); err != nil {
			t.Fatal(err)
		}
	}
	agent, err := e.Agent(ctx, "ide")
	if err != nil {
		t.Fatal(err)
	}
	started, err := agent.Start(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	restored, err := agent.Restore(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Restore(ctx, "missing"); !errors.Is(err, reprise.ErrSessionNotFound) {
		t.Fatalf("restore of a missing session: %v", err)
	}

	// The start: its span, its SessionStart run and that run's two hooks.
	starts := tel.named("reprise.start")
	if len(starts) != 1 {
		t.Fatalf("%d reprise.start spans, want 1", len(starts))
	}
	start := starts[0]
	if start.Parent().IsValid() {
		t.Errorf("reprise.start has a parent: %v", start.Parent())
	}
	want(t, "reprise.start", attrs(start), rotel.AgentKey.String("ide"), rotel.SessionKey.String("a"),
		rotel.ActionKey.String("start"), rotel.RestoreIDKey.String(started.ID),
		rotel.RestoreSourceKey.String("startup"), rotel.RestoreToKey.String("a"), rotel.RestoreFromKey.String(""))
	if start.Status().Code != codes.Unset {
		t.Errorf("reprise.start status %v", start.Status())
	}
	checkSteps(t, start, started)

	runs := tel.named("reprise.hooks.SessionStart")
	if len(runs) != 2 {
		t.Fatalf("%d reprise.hooks.SessionStart spans, want 2", len(runs))
	}
	startRun := runs[0]
	childOf(t, startRun, start)
	want(t, "start's SessionStart run", attrs(startRun), rotel.HookEventKey.String("SessionStart"),
		rotel.SessionKey.String("a"), rotel.SourceKey.String("startup"), rotel.HookCountKey.Int(2),
		rotel.HookFailedKey.Int(0))
	if started.Context != traceparent(startRun) {
		t.Errorf("the start's command hook saw TRACEPARENT %q, want its run's %q", started.Context, traceparent(startRun))
	}
	checkStartHooks(t, tel, startRun, echo)

	// The restore: SessionEnd with the failing hook, then SessionStart.
	restores := tel.named("reprise.restore")
	if len(restores) != 2 {
		t.Fatalf("%d reprise.restore spans, want 2", len(restores))
	}
	restore := restores[0]
	want(t, "reprise.restore", attrs(restore), rotel.AgentKey.String("ide"), rotel.SessionKey.String("b"),
		rotel.ActionKey.String("restore"), rotel.RestoreIDKey.String(restored.ID),
		rotel.RestoreSourceKey.String("resume"), rotel.RestoreReasonKey.String("resume"),
		rotel.RestoreFromKey.String("a"), rotel.RestoreToKey.String("b"),
		rotel.RestoreStepsKey.Int(len(restored.Steps)))
	if restore.Status().Code != codes.Unset {
		t.Errorf("reprise.restore status %v: a failed hook does not fail the restore", restore.Status())
	}
	checkSteps(t, restore, restored)

	ends := tel.named("reprise.hooks.SessionEnd")
	if len(ends) != 1 {
		t.Fatalf("%d reprise.hooks.SessionEnd spans, want 1", len(ends))
	}
	childOf(t, ends[0], restore)
	want(t, "SessionEnd run", attrs(ends[0]), rotel.HookEventKey.String("SessionEnd"), rotel.SessionKey.String("a"),
		rotel.ReasonKey.String("resume"), rotel.HookCountKey.Int(1), rotel.HookFailedKey.Int(1))
	failed := tel.children(ends[0])
	if len(failed) != 1 {
		t.Fatalf("the SessionEnd run has %d children, want 1", len(failed))
	}
	want(t, "failing hook", attrs(failed[0]), rotel.HookNameKey.String(fail), rotel.HookCommandKey.String(fail),
		rotel.HookKindKey.String("command"), rotel.HookStatusKey.String("failed"), rotel.HookExitCodeKey.Int(3),
		rotel.HookEventKey.String("SessionEnd"))
	if st := failed[0].Status(); st.Code != codes.Error || !strings.HasPrefix(st.Description, "failed") {
		t.Errorf("failing hook's status %+v", st)
	}
	if failed[0].Name() != rotel.HookSpanName {
		t.Errorf("a hook's span is called %q", failed[0].Name())
	}
	if d, ok := attrs(failed[0])[rotel.HookDurationKey]; !ok || d.AsFloat64() <= 0 {
		t.Errorf("failing hook's duration %v", d.String())
	}
	if got := failed[0].EndTime().Sub(failed[0].StartTime()); got <= 0 || failed[0].StartTime().Before(ends[0].StartTime()) {
		t.Errorf("failing hook's span runs from %v for %v, its run from %v", failed[0].StartTime(), got, ends[0].StartTime())
	}

	resumeRun := runs[1]
	childOf(t, resumeRun, restore)
	want(t, "restore's SessionStart run", attrs(resumeRun), rotel.SessionKey.String("b"),
		rotel.SourceKey.String("resume"), rotel.HookCountKey.Int(2))
	if restored.Context != traceparent(resumeRun) {
		t.Errorf("the restore's command hook saw TRACEPARENT %q, want its run's %q", restored.Context, traceparent(resumeRun))
	}
	if resumeRun.SpanContext().TraceID() == startRun.SpanContext().TraceID() {
		t.Errorf("the start and the restore share a trace")
	}
	checkStartHooks(t, tel, resumeRun, echo)

	// The refused restore: its error on its span.
	refused := restores[1]
	want(t, "refused restore", attrs(refused), rotel.SessionKey.String("missing"))
	if st := refused.Status(); st.Code != codes.Error || !strings.Contains(st.Description, "session not found") {
		t.Errorf("refused restore's status %+v", st)
	}
	if evs := refused.Events(); len(evs) != 1 || evs[0].Name != "exception" {
		t.Errorf("refused restore's events %+v, want the error recorded", evs)
	}
	if _, ok := attrs(refused)[rotel.RestoreIDKey]; ok {
		t.Errorf("refused restore has a restore id")
	}

	checkMetrics(t, tel.metrics(t))
}

// checkSteps checks that span has an event per step of r, in order.
func checkSteps(t *testing.T, span sdktrace.ReadOnlySpan, r *reprise.Transition) {
	t.Helper()
	var types []string
	var last int64
	for _, ev := range span.Events() {
		if ev.Name != rotel.StepEventName {
			continue
		}
		kv := map[attribute.Key]attribute.Value{}
		for _, a := range ev.Attributes {
			kv[a.Key] = a.Value
		}
		types = append(types, kv[rotel.StepTypeKey].AsString())
		want(t, span.Name()+" step", kv, rotel.StepStreamKey.String("agent/ide"), rotel.RestoreIDKey.String(r.ID))
		if seq := kv[rotel.StepSeqKey].AsInt64(); seq <= last {
			t.Errorf("%s: step seq %d after %d", span.Name(), seq, last)
		} else {
			last = seq
		}
	}
	var steps []string
	for _, s := range r.Steps {
		steps = append(steps, string(s))
	}
	if !slices.Equal(types, steps) {
		t.Errorf("%s: step events %v, want the restore's steps %v", span.Name(), types, steps)
	}
}

// checkStartHooks checks the two hook spans of a SessionStart run.
func checkStartHooks(t *testing.T, tel *telemetry, run sdktrace.ReadOnlySpan, echo string) {
	t.Helper()
	hooks := tel.children(run)
	if len(hooks) != 2 {
		t.Fatalf("%s has %d children, want 2", run.Name(), len(hooks))
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, h := range hooks {
		byName[attrs(h)[rotel.HookNameKey].AsString()] = h
	}
	cmd, fn := byName[echo], byName["go-hook"]
	if cmd == nil || fn == nil {
		t.Fatalf("hook spans %v", byName)
	}
	want(t, "echo hook", attrs(cmd), rotel.HookKindKey.String("command"), rotel.HookStatusKey.String("ok"),
		rotel.HookExitCodeKey.Int(0), rotel.HookCommandKey.String(echo), rotel.HookSourceKey.String(""))
	want(t, "function hook", attrs(fn), rotel.HookKindKey.String("function"), rotel.HookStatusKey.String("ok"),
		rotel.HookSourceKey.String("function"))
	if _, ok := attrs(fn)[rotel.HookExitCodeKey]; ok {
		t.Errorf("a function hook has an exit code")
	}
	for _, h := range hooks {
		if h.Status().Code != codes.Unset {
			t.Errorf("%s status %v", h.Name(), h.Status())
		}
	}
}

// checkMetrics checks what TestEngineIsTraced measured.
func checkMetrics(t *testing.T, got map[string]metricdata.Aggregation) {
	t.Helper()
	actions, ok := got[rotel.ActionDurationMetric].(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is %T", rotel.ActionDurationMetric, got[rotel.ActionDurationMetric])
	}
	counts := map[string]uint64{}
	for _, p := range actions.DataPoints {
		action, _ := p.Attributes.Value(rotel.ActionKey)
		errType, _ := p.Attributes.Value(rotel.ErrorTypeKey)
		counts[action.AsString()+"/"+errType.AsString()] += p.Count
		if p.Sum <= 0 {
			t.Errorf("%s %v: sum %v", rotel.ActionDurationMetric, p.Attributes, p.Sum)
		}
	}
	if w := map[string]uint64{"start/": 1, "restore/": 1, "restore/session_not_found": 1}; !mapsEqual(counts, w) {
		t.Errorf("%s counts %v, want %v", rotel.ActionDurationMetric, counts, w)
	}

	outcomes, ok := got[rotel.HookOutcomesMetric].(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is %T", rotel.HookOutcomesMetric, got[rotel.HookOutcomesMetric])
	}
	if !outcomes.IsMonotonic {
		t.Errorf("%s is not monotonic", rotel.HookOutcomesMetric)
	}
	hooks := map[string]int64{}
	for _, p := range outcomes.DataPoints {
		ev, _ := p.Attributes.Value(rotel.HookEventKey)
		st, _ := p.Attributes.Value(rotel.HookStatusKey)
		kind, _ := p.Attributes.Value(rotel.HookKindKey)
		hooks[ev.AsString()+"/"+st.AsString()+"/"+kind.AsString()] += p.Value
	}
	if w := map[string]int64{"SessionStart/ok/command": 2, "SessionStart/ok/function": 2, "SessionEnd/failed/command": 1}; !mapsEqual(hooks, w) {
		t.Errorf("%s %v, want %v", rotel.HookOutcomesMetric, hooks, w)
	}

	appends, ok := got[rotel.AppendDurationMetric].(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is %T", rotel.AppendDurationMetric, got[rotel.AppendDurationMetric])
	}
	var n uint64
	for _, p := range appends.DataPoints {
		if p.Attributes.Len() != 0 {
			t.Errorf("%s: a failed append %v", rotel.AppendDurationMetric, p.Attributes)
		}
		n += p.Count
	}
	// The message, then the start's 4 steps and the restore's 7. (Creating
	// a session is not told to the Observer.)
	if n < 1+4+7 {
		t.Errorf("%s counted %d appends, want at least 12", rotel.AppendDurationMetric, n)
	}
}

func mapsEqual[V comparable](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestHookOutcomesAreVisible gives the Observer an outcome of every
// status and checks each one's span and count.
func TestHookOutcomesAreVisible(t *testing.T) {
	tel := newTelemetry(t)
	obs := rotel.New(tel.tp, tel.mp)
	noop := func(context.Context, hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
		return hookexec.SessionEndOutput{}, nil
	}
	statuses := []string{schema.HookOK, schema.HookFailed, schema.HookTimedOut, schema.HookCancelled,
		schema.HookInterrupted, schema.HookPanicked}
	var hooks []hookexec.Hook
	var outcomes []schema.HookOutcome
	for i, st := range statuses {
		h := hookexec.Hook{Event: hookexec.SessionEnd, Name: st, Source: "settings.json", Body: hookexec.Command{Line: "true"}}
		if i%2 == 1 {
			h.Source, h.Body = "function", hookexec.SessionEndFunc(noop)
		}
		hooks = append(hooks, h)
		o := schema.HookOutcome{Name: st, Source: h.Source, Status: st, Duration: int64(time.Duration(i+1) * time.Millisecond)}
		if st != schema.HookOK {
			o.Error = "went " + st
		}
		if st == schema.HookFailed {
			o.ExitCode = 2
		}
		outcomes = append(outcomes, o)
	}
	ctx, env, end := obs.Hooks(t.Context(), hookexec.SessionEnd, "s", "clear", hooks)
	if !trace.SpanContextFromContext(ctx).IsValid() {
		t.Fatal("Hooks gave no span in its context")
	}
	if len(env) != 1 || !strings.HasPrefix(env[0], "TRACEPARENT=00-") {
		t.Errorf("env %q", env)
	}
	end(outcomes)

	runs := tel.named("reprise.hooks.SessionEnd")
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	if env[0] != "TRACEPARENT="+traceparent(runs[0]) {
		t.Errorf("env %q, run %s", env, traceparent(runs[0]))
	}
	want(t, "run", attrs(runs[0]), rotel.ReasonKey.String("clear"), rotel.HookCountKey.Int(len(hooks)),
		rotel.HookFailedKey.Int(len(hooks)-1))
	spans := tel.children(runs[0])
	if len(spans) != len(statuses) {
		t.Fatalf("%d hook spans, want %d", len(spans), len(statuses))
	}
	for i, s := range spans {
		st := statuses[i]
		kind := "command"
		if i%2 == 1 {
			kind = "function"
		}
		kv := attrs(s)
		want(t, st, kv, rotel.HookNameKey.String(st), rotel.HookStatusKey.String(st), rotel.HookKindKey.String(kind),
			rotel.HookDurationKey.Float64((time.Duration(i+1) * time.Millisecond).Seconds()))
		if got := s.EndTime().Sub(s.StartTime()); got != time.Duration(i+1)*time.Millisecond {
			t.Errorf("%s: span lasts %v", st, got)
		}
		if st == schema.HookOK {
			if s.Status().Code != codes.Unset || len(s.Events()) != 0 {
				t.Errorf("ok hook: status %v, events %v", s.Status(), s.Events())
			}
			continue
		}
		want(t, st, kv, rotel.HookErrorKey.String("went "+st))
		if s.Status().Code != codes.Error || s.Status().Description != st+": went "+st {
			t.Errorf("%s: status %+v", st, s.Status())
		}
		if len(s.Events()) != 1 || s.Events()[0].Name != "exception" {
			t.Errorf("%s: events %+v, want the error recorded", st, s.Events())
		}
	}
	if v := attrs(spans[1])[rotel.HookExitCodeKey]; v.AsInt64() != 2 {
		t.Errorf("failed hook's exit code %v", v.String())
	}

	got := tel.metrics(t)[rotel.HookOutcomesMetric].(metricdata.Sum[int64])
	counts := map[string]int64{}
	for _, p := range got.DataPoints {
		st, _ := p.Attributes.Value(rotel.HookStatusKey)
		kind, _ := p.Attributes.Value(rotel.HookKindKey)
		counts[st.AsString()+"/"+kind.AsString()] += p.Value
	}
	w := map[string]int64{"ok/command": 1, "failed/function": 1, "timeout/command": 1,
		"cancelled/function": 1, "interrupted/command": 1, "panicked/function": 1}
	if !mapsEqual(counts, w) {
		t.Errorf("outcome counts %v, want %v", counts, w)
	}
}

// TestTraceStateReachesHooks checks that a hook run under a remote parent
// with a tracestate passes both on, and that the hook run joins the
// parent's trace.
func TestTraceStateReachesHooks(t *testing.T) {
	tel := newTelemetry(t)
	obs := rotel.New(tel.tp, tel.mp)
	ts, err := trace.ParseTraceState("vendor=abc")
	if err != nil {
		t.Fatal(err)
	}
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3},
		SpanID:     trace.SpanID{4, 5, 6},
		TraceFlags: trace.FlagsSampled,
		TraceState: ts,
		Remote:     true,
	})
	ctx := trace.ContextWithRemoteSpanContext(t.Context(), parent)
	ctx, endAction := obs.Action(ctx, "ide", "stop", "s")
	_, env, end := obs.Hooks(ctx, hookexec.Stop, "s", "", nil)
	end(nil)
	endAction(nil, nil)
	run := tel.named("reprise.hooks.Stop")
	if len(run) != 1 {
		t.Fatalf("%d runs", len(run))
	}
	if run[0].SpanContext().TraceID() != parent.TraceID() {
		t.Errorf("the run left the caller's trace")
	}
	w := []string{"TRACEPARENT=" + traceparent(run[0]), "TRACESTATE=vendor=abc"}
	if !slices.Equal(env, w) {
		t.Errorf("env %q, want %q", env, w)
	}
	for _, k := range []attribute.Key{rotel.SourceKey, rotel.ReasonKey, rotel.TriggerKey} {
		if _, ok := attrs(run[0])[k]; ok {
			t.Errorf("a Stop run has %s", k)
		}
	}
}

// TestNilProvidersAreTheGlobalOnes checks New(nil, nil) against the global
// providers.
func TestNilProvidersAreTheGlobalOnes(t *testing.T) {
	tel := newTelemetry(t)
	tp, mp := global.GetTracerProvider(), global.GetMeterProvider()
	global.SetTracerProvider(tel.tp)
	global.SetMeterProvider(tel.mp)
	t.Cleanup(func() {
		global.SetTracerProvider(tp)
		global.SetMeterProvider(mp)
	})
	obs := rotel.New(nil, nil)
	_, end := obs.Action(t.Context(), "ide", "new", "s")
	end(nil, nil)
	if n := len(tel.named("reprise.new")); n != 1 {
		t.Errorf("%d reprise.new spans on the global tracer provider", n)
	}
	if _, ok := tel.metrics(t)[rotel.ActionDurationMetric]; !ok {
		t.Errorf("no %s on the global meter provider", rotel.ActionDurationMetric)
	}
}

// TestNoopProviders checks that an Observer over no-op providers adds
// nothing and fails nothing.
func TestNoopProviders(t *testing.T) {
	obs := rotel.New(tracenoop.NewTracerProvider(), nil)
	ctx, end := obs.Action(t.Context(), "ide", "start", "s")
	obs.Step(ctx, eventlog.Event{Stream: "agent/ide", Seq: 1, Type: "SaveAttempted"})
	_, env, endHooks := obs.Hooks(ctx, hookexec.SessionStart, "s", "startup", nil)
	endHooks(nil)
	end(nil, errors.New("boom"))
	obs.Appended(ctx, 1, time.Millisecond, eventlog.ErrConflict)
	if env != nil {
		t.Errorf("env %q", env)
	}
}
