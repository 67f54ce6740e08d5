// Package golden writes the golden stores: event logs written by this
// build through the Engine's public API, committed under testdata/golden so
// that later builds can prove they still open and read them.
//
// Generate drives one scripted history that holds every event type of the
// schema, every hook outcome status and every SessionStart source, a
// finished import and a hook command recorded by its digest, then
// deletes sessions, vacuums one of them away and ends a step whose session
// another host deleted under it, so that the stores it writes have the
// formats deletion brought (a bbolt gaps bucket, PostgreSQL's
// reprise_gaps). Its clock and its ids are fixed, so two runs write the
// same events except for the hooks' measured durations. The stores of
// testdata/golden/v1 were written by an older Generate, before deletion.
package golden

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// Epoch is the time of the first event Generate writes; each reading of
// the clock after it is one millisecond later.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// settingsSource is the Source of the hooks Generate registers as if they
// came from a settings file.
const settingsSource = "golden/settings.json"

// longCommand is a command line longer than hookexec.CommandName keeps
// whole, so that its records name it by length and digest.
var longCommand = "true" + strings.Repeat(" ", 1100) + "# a long command, recorded by its digest"

// errInjected is the error the failing store returns for a save.
var errInjected = errors.New("injected for the golden store: no space left on device")

// script holds what the scripted history needs between its steps.
type script struct {
	ctx    context.Context
	e      *reprise.Engine
	store  *failingStore
	mu     sync.Mutex
	ticks  int64
	nextID int
	dir    string
	ended  chan reprise.AsyncHookEnded
}

// now is the Engine's clock: Epoch, then one millisecond more per reading.
func (s *script) now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := Epoch.Add(time.Duration(s.ticks) * time.Millisecond)
	s.ticks++
	return t
}

// newID makes UUID-shaped ids that count up.
func (s *script) newID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", s.nextID)
}

// failingStore fails the next save armed by failNextSave: an append that
// writes messages together with a SaveAttempted step. Every other call goes
// to the store underneath.
type failingStore struct {
	eventlog.Store
	mu    sync.Mutex
	armed bool
}

func (f *failingStore) failNextSave() {
	f.mu.Lock()
	f.armed = true
	f.mu.Unlock()
}

func (f *failingStore) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	f.mu.Lock()
	fail := f.armed && hasType(recs, schema.TypeSaveAttempted) && hasType(recs, schema.TypeMessageAppended)
	if fail {
		f.armed = false
	}
	f.mu.Unlock()
	if fail {
		return nil, errInjected
	}
	return f.Store.Append(ctx, expect, recs)
}

// Purge lets a vacuum through to the store underneath, which must be an
// eventlog.Purger.
func (f *failingStore) Purge(ctx context.Context, p eventlog.Purge) ([]eventlog.Event, error) {
	purger, ok := f.Store.(eventlog.Purger)
	if !ok {
		return nil, fmt.Errorf("golden: %T cannot purge", f.Store)
	}
	return purger.Purge(ctx, p)
}

// Compact compacts the store underneath after a vacuum, if it can.
func (f *failingStore) Compact(ctx context.Context) error {
	if c, ok := f.Store.(interface{ Compact(context.Context) error }); ok {
		return c.Compact(ctx)
	}
	return nil
}

// TryLock keeps the store underneath's stream locks, if it has them.
func (f *failingStore) TryLock(ctx context.Context, stream string) (func(), error) {
	if l, ok := f.Store.(eventlog.StreamLocker); ok {
		return l.TryLock(ctx, stream)
	}
	return func() {}, nil
}

func hasType(recs []eventlog.Record, t eventlog.Type) bool {
	for _, r := range recs {
		if r.Type == t {
			return true
		}
	}
	return false
}

// Generate writes the scripted history into store through an Engine it
// builds over it, and closes store. dir holds the Engine's transcripts and
// env files; transcript is a Claude Code transcript (JSONL) to import.
// Command hooks run /bin/sh in "/", the working directory of the sessions
// they run for.
func Generate(ctx context.Context, store eventlog.Store, dir string, transcript []byte) (err error) {
	s := &script{ctx: ctx, store: &failingStore{Store: store}, dir: dir, ended: make(chan reprise.AsyncHookEnded, 1)}
	s.e = reprise.New(s.store, reprise.Options{
		Logger:         slog.New(slog.DiscardHandler),
		Now:            s.now,
		NewID:          s.newID,
		TranscriptDir:  dir,
		StopBlockCap:   1,
		AsyncHookEnded: func(x reprise.AsyncHookEnded) { s.ended <- x },
	})
	defer func() { err = errors.Join(err, s.e.Close()) }()
	if err := s.registerHooks(); err != nil {
		return err
	}
	if err := s.sessions(transcript); err != nil {
		return err
	}
	if err := s.ide(); err != nil {
		return fmt.Errorf("agent ide: %w", err)
	}
	if err := s.tools(); err != nil {
		return fmt.Errorf("agent builder: %w", err)
	}
	if err := s.crashed(); err != nil {
		return fmt.Errorf("agent crashed: %w", err)
	}
	if err := s.deletion(); err != nil {
		return fmt.Errorf("agent cleaner: %w", err)
	}
	if err := s.async(); err != nil {
		return fmt.Errorf("agent watcher: %w", err)
	}
	if err := s.fired(); err != nil {
		return fmt.Errorf("agent notifier: %w", err)
	}
	if err := s.subagents(); err != nil {
		return fmt.Errorf("agent delegator: %w", err)
	}
	return nil
}

// subagents is an agent's Agent call on session zeta, allowed, and the
// subagent it starts: a session linked to the call, whose SubagentStart
// hook gives context and whose SubagentStop hook blocks its first stop;
// the subagent's answer is then the call's result.
func (s *script) subagents() error {
	ctx, e := s.ctx, s.e
	const agent, session = "delegator", "zeta"
	if _, err := e.CreateSession(ctx, session, "/"); err != nil {
		return err
	}
	if _, err := e.Append(ctx, session, reprise.Text("user", "Find the flaky test.")); err != nil {
		return err
	}
	a, err := e.Agent(ctx, agent)
	if err != nil {
		return err
	}
	if _, err := a.Start(ctx, session); err != nil {
		return err
	}
	call := json.RawMessage(`{"description":"find it","prompt":"Run the tests three times and name the flaky one.","subagent_type":"general-purpose"}`)
	if _, err := e.Append(ctx, session, reprise.ToolUseMessage("toolu_agent", "Agent", call)); err != nil {
		return err
	}
	if _, err := a.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_agent", Name: "Agent", Input: call, Permission: hookexec.Allow}); err != nil {
		return err
	}
	child, err := a.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: "toolu_agent", Description: "find it",
		Prompt: "Run the tests three times and name the flaky one."})
	if err != nil {
		return err
	}
	for _, text := range []string{"Done.", "TestRetry is flaky."} {
		if _, err := e.Append(ctx, child.ID(), reprise.Text("assistant", text)); err != nil {
			return err
		}
		if _, err := child.Stop(ctx); err != nil {
			return err
		}
	}
	_, err = a.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_agent", Output: json.RawMessage(`"TestRetry is flaky."`)})
	return err
}

// fired is an agent's fired hook events on session epsilon: a host's
// Notification, whose command hook gives context, and a TaskCreated it
// blocks; an answer's PostToolBatch, whose context reaches the model as a
// meta message; an auto compaction, whose SessionCompacted records its
// trigger and whose PostCompact hook runs; and a Notification whose
// process died while its hook ran (its intent appended here as that
// process had), closed as interrupted by the next process that loads the
// agent: a second Engine over the same store.
func (s *script) fired() error {
	ctx, e := s.ctx, s.e
	const agent, session = "notifier", "epsilon"
	if _, err := e.CreateSession(ctx, session, "/"); err != nil {
		return err
	}
	if _, err := e.Append(ctx, session, reprise.Text("user", "Tell me when the build is done.")); err != nil {
		return err
	}
	for _, h := range []hookexec.Hook{
		{Event: schema.HookNotification, Body: hookexec.Command{
			Line: `echo '{"hookSpecificOutput":{"hookEventName":"Notification","additionalContext":"the user was told"}}'`}},
		{Event: schema.HookTaskCreated, Body: hookexec.Command{Line: `echo 'no tasks during a release' >&2; exit 2`}},
		{Event: schema.HookPostToolBatch, Name: "batch-notes", Body: hookexec.EventFunc(func(context.Context, hookexec.EventInput) (hookexec.EventOutput, error) {
			return hookexec.EventOutput{HookSpecificOutput: []byte(`{"hookEventName":"PostToolBatch","additionalContext":"the build log is in /tmp/build.log"}`)}, nil
		})},
		{Event: schema.HookPostCompact, Name: "after-compact", Body: hookexec.EventFunc(func(context.Context, hookexec.EventInput) (hookexec.EventOutput, error) {
			return hookexec.EventOutput{SystemMessage: "compacted"}, nil
		})},
	} {
		if _, err := s.sessionHook(session, h); err != nil {
			return err
		}
	}
	a, err := e.Agent(ctx, agent)
	if err != nil {
		return err
	}
	if _, err := a.Start(ctx, session); err != nil {
		return err
	}
	if _, err := a.Fire(ctx, schema.HookNotification, "notify-1",
		[]byte(`{"message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}`)); err != nil {
		return err
	}
	if _, err := a.Fire(ctx, schema.HookTaskCreated, "task-1", []byte(`{"task_id":"1","task_subject":"tag the release"}`)); err != nil {
		return err
	}
	// PostToolUse of the answer's last call fires its PostToolBatch.
	if _, err := a.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_build", Name: "Bash", Input: []byte(`{"command":"make"}`),
		Permission: hookexec.Allow, AddToolUse: true}); err != nil {
		return err
	}
	fb, err := a.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_build", Output: []byte(`"build ok"`)})
	if err != nil {
		return err
	}
	if fb.Batch == nil || fb.Batch.Context == "" {
		return fmt.Errorf("the answer's PostToolBatch did not run: %+v", fb.Batch)
	}
	if _, err := a.Compact(ctx, "The user waits for the build; it passed.", reprise.WithTrigger("auto")); err != nil {
		return err
	}

	// The intent of a fire whose process died while its hook ran.
	stream := projection.AgentStream(agent)
	head, err := e.Store().Head(ctx, stream)
	if err != nil {
		return err
	}
	intent, err := schema.NewRecord(stream, &schema.HookEventStarted{Event: schema.HookNotification, Session: session, ID: "notify-2",
		Value: "idle_prompt", Fields: []byte(`{"message":"Claude is waiting for your input","notification_type":"idle_prompt"}`),
		Hooks: hookexec.Names(e.HooksFor(ctx, schema.HookNotification, "idle_prompt", session))}, s.now().UnixNano(), "notify-2")
	if err != nil {
		return err
	}
	if _, err := e.Store().Append(ctx, []eventlog.Expect{{Stream: stream, Seq: head}}, []eventlog.Record{intent}); err != nil {
		return err
	}
	next := reprise.New(sharedStore{s.store}, reprise.Options{Logger: slog.New(slog.DiscardHandler), Now: s.now, NewID: s.newID,
		TranscriptDir: s.dir})
	_, err = next.Agent(ctx, agent)
	return errors.Join(err, next.Close())
}

// sharedStore is the script's store as a second process sees it: closing
// that process's Engine leaves it open.
type sharedStore struct{ *failingStore }

func (sharedStore) Close() error { return nil }

// async is an agent whose UserPromptSubmit hook runs in the background:
// the first prompt starts it, it ends (AsyncHookEnded) once the script
// lets it, and the second prompt, which no hook sees, takes its context
// to the model (AsyncContextInjected). The hook waits for the script, so
// that every reading of the clock comes in the same order each time.
func (s *script) async() error {
	ctx, e := s.ctx, s.e
	gate := filepath.Join(s.dir, "async-gate")
	if _, err := e.CreateSession(ctx, "delta", "/"); err != nil {
		return err
	}
	remove, err := s.sessionHook("delta", hookexec.Hook{Event: hookexec.UserPromptSubmit, Async: true, Body: hookexec.Command{
		Line: `while [ ! -e '` + gate + `' ]; do sleep 0.01; done; echo '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"the linter found 2 issues"}}'`}})
	if err != nil {
		return err
	}
	a, err := e.Agent(ctx, "watcher")
	if err != nil {
		return err
	}
	if _, err := a.Start(ctx, "delta"); err != nil {
		return err
	}
	if _, err := a.Prompt(ctx, "Lint the notes."); err != nil {
		return err
	}
	remove()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		return err
	}
	select {
	case <-s.ended:
	case <-time.After(time.Minute):
		return errors.New("the async hook never ended")
	}
	_, err = a.Prompt(ctx, "Fix them.")
	return err
}

// registerHooks adds the hooks every session has, each selected by the
// source or reason of one step of the script.
func (s *script) registerHooks() error {
	r := s.e.Hooks()
	command := func(event hookexec.Event, matcher, cmd string) error {
		m, err := hookexec.ParseMatcher(matcher)
		if err != nil {
			return err
		}
		return r.Add(hookexec.Hook{Event: event, Matcher: m, Body: hookexec.Command{Line: cmd}, Source: settingsSource})
	}
	for _, err := range []error{
		command(hookexec.SessionStart, "startup", `echo "alpha is on branch main"`),
		command(hookexec.SessionStart, "startup", `echo 'export GOLDEN_MODE=startup' >> "$CLAUDE_ENV_FILE"`),
		r.OnSessionStart("compact-context", "compact", func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			return hookexec.SessionStartOutput{AdditionalContext: "the summary left out the stack trace"}, nil
		}),
		command(hookexec.SessionStart, "fork",
			`printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"forked from alpha"}}'`),
		r.OnSessionStart("clear-quiet", "clear", func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			return hookexec.SessionStartOutput{}, nil
		}),
		command(hookexec.SessionStart, "new", `echo "a fresh session"`),
		command(hookexec.SessionStart, "startup", longCommand),
		command(hookexec.SessionEnd, "clear", `cat > /dev/null`),
		r.OnSessionEnd("end-summary", "error|user_exit", func(_ context.Context, in hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
			return hookexec.SessionEndOutput{SessionSummary: "ended with reason " + string(in.Reason),
				CleanupActions: []string{"remove the scratch branch", "close the draft PR"}}, nil
		}),
		r.OnPreCompact("compact-allowed", "manual", func(context.Context, hookexec.PreCompactInput) (hookexec.PreCompactOutput, error) {
			return hookexec.PreCompactOutput{}, nil
		}),
		r.OnStop("stop-check", func(context.Context, hookexec.StopInput) (hookexec.StopOutput, error) {
			return hookexec.StopOutput{}, nil
		}),
		command(schema.HookSubagentStart, "general-purpose",
			`echo '{"hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":"the tests are in ./ci"}}'`),
		r.On(schema.HookSubagentStop, "", func(_ context.Context, in hookexec.EventInput) (hookexec.EventOutput, error) {
			if strings.Contains(string(in.Fields), `"last_assistant_message":"Done."`) {
				return hookexec.EventOutput{Decision: "block", Reason: "name the test"}, nil
			}
			return hookexec.EventOutput{}, nil
		}),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// sessionHook gives session id hook h for one step; the returned function
// takes it away again.
func (s *script) sessionHook(id string, h hookexec.Hook) (remove func(), err error) {
	hid, err := s.e.AddSessionHook(id, h)
	if err != nil {
		return nil, err
	}
	return func() { s.e.RemoveSessionHook(id, hid) }, nil
}

// sessions creates alpha and beta, with a message holding a raw block, and
// imports the transcript as session imported.
func (s *script) sessions(transcript []byte) error {
	ctx, e := s.ctx, s.e
	for _, id := range []string{"alpha", "beta"} {
		if _, err := e.CreateSession(ctx, id, "/"); err != nil {
			return err
		}
	}
	for _, m := range []struct{ id, role, text string }{
		{"alpha", "user", "Why does TestRefund flake?"},
		{"alpha", "assistant", "It shares a ledger with TestCharge."},
		{"beta", "user", "Draft the retry design."},
	} {
		if _, err := e.Append(ctx, m.id, reprise.Text(m.role, m.text)); err != nil {
			return err
		}
	}
	tool := reprise.Message{Role: "assistant", Content: []reprise.Block{
		{Type: "text", Text: "Reading the design notes."},
		{Type: "tool_use", Raw: []byte(`{"type":"tool_use","id":"toolu_golden","name":"Read","input":{"file_path":"/docs/retry.md"}}`)},
	}}
	if _, err := e.Append(ctx, "beta", tool); err != nil {
		return err
	}
	// The call has its result before the conversation goes on, as the
	// Messages API requires (and appends since v6).
	result := reprise.Message{Role: "user", Content: []reprise.Block{
		{Type: "tool_result", Raw: []byte(`{"type":"tool_result","tool_use_id":"toolu_golden","content":"Retries: exponential backoff."}`)},
	}}
	if _, err := e.Append(ctx, "beta", result); err != nil {
		return err
	}
	// The cwd is chosen: the one of the process writing the set would tie
	// the store to where it was generated.
	_, err := e.Import(ctx, bytes.NewReader(transcript), reprise.ImportOptions{ID: "imported", Cwd: "/"})
	return err
}

// tools is an agent's tool calls on alpha: a call a command hook denies, a
// call its PermissionRequest hook allows with another input, whose result
// a PostToolUse hook comments on, and a call that fails.
func (s *script) tools() error {
	ctx, e := s.ctx, s.e
	for _, h := range []hookexec.Hook{
		{Event: hookexec.PreToolUse, Body: hookexec.Command{Line: `grep -q 'rm -rf' && { echo 'no rm -rf here' >&2; exit 2; }; exit 0`}},
		{Event: hookexec.PermissionRequest, Body: hookexec.Command{
			Line: `echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"file_path":"/docs/NOTES.md"}}}}'`}},
		{Event: hookexec.PostToolUse, Name: "post-lint", Body: hookexec.PostToolUseFunc(func(context.Context, hookexec.ToolInput) (hookexec.PostToolUseOutput, error) {
			return hookexec.PostToolUseOutput{AdditionalContext: "the notes are linted"}, nil
		})},
		{Event: hookexec.PostToolUseFailure, Name: "on-error", Body: hookexec.ErrorOccurredFunc(func(context.Context, hookexec.ToolInput) (hookexec.ErrorOccurredOutput, error) {
			return hookexec.ErrorOccurredOutput{ErrorHandling: "skip"}, nil
		})},
	} {
		if _, err := s.sessionHook("alpha", h); err != nil {
			return err
		}
	}
	a, err := e.Agent(ctx, "builder")
	if err != nil {
		return err
	}
	if _, err := a.Start(ctx, "alpha"); err != nil {
		return err
	}
	// The model's answer holds the three calls before they are asked about.
	if _, err := e.Append(ctx, "alpha", reprise.Message{Role: "assistant", Content: []reprise.Block{
		reprise.ToolUseBlock("toolu_rm", "Bash", []byte(`{"command":"rm -rf /"}`)),
		reprise.ToolUseBlock("toolu_write", "Write", []byte(`{"file_path":"/etc/hosts"}`)),
		reprise.ToolUseBlock("toolu_make", "Bash", []byte(`{"command":"make"}`))}}); err != nil {
		return err
	}
	if _, err := a.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_rm", Name: "Bash", Input: []byte(`{"command":"rm -rf /"}`), Permission: hookexec.Allow}); err != nil {
		return err
	}
	if _, err := a.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_write", Name: "Write", Input: []byte(`{"file_path":"/etc/hosts"}`)}); err != nil {
		return err
	}
	if _, err := a.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_write", Output: []byte(`"written"`)}); err != nil {
		return err
	}
	if _, err := a.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_make", Name: "Bash", Input: []byte(`{"command":"make"}`), Permission: hookexec.Allow}); err != nil {
		return err
	}
	_, err = a.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_make", Error: "Exit code 2"})
	return err
}

// ide is the main agent's history: every source, every status but
// interrupted, a compaction, a fork, stops blocked and capped, a failed
// save and an End.
func (s *script) ide() error {
	ctx, e := s.ctx, s.e
	a, err := e.Agent(ctx, "ide")
	if err != nil {
		return err
	}
	// Startup: context from stdout and an env file.
	if _, err := a.Start(ctx, "alpha"); err != nil {
		return err
	}

	// Resume alpha -> beta with a pending message: SessionEnd hooks that
	// fail, panic and overflow their capture; SessionStart hooks that time
	// out or say nothing, so nothing is injected.
	if _, err := e.Buffer(ctx, "alpha", reprise.Text("user", "Also check TestCapture.")); err != nil {
		return err
	}
	var removes []func()
	for _, h := range []struct {
		id string
		h  hookexec.Hook
	}{
		{"alpha", hookexec.Hook{Event: hookexec.SessionEnd, Body: hookexec.Command{Line: `echo "lint config missing" >&2; exit 3`}}},
		{"alpha", hookexec.Hook{Event: hookexec.SessionEnd, Name: "end-panics",
			Body: hookexec.SessionEndFunc(func(context.Context, hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
				panic("the golden hook panics")
			})}},
		{"alpha", hookexec.Hook{Event: hookexec.SessionEnd, Body: hookexec.Command{Line: fmt.Sprintf("head -c %d /dev/zero >&2", hookexec.MaxCapture+100)}}},
		{"beta", hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.Command{Line: "sleep 5"}, Timeout: 300 * time.Millisecond}},
		{"beta", hookexec.Hook{Event: hookexec.SessionStart, Name: "start-quiet",
			Body: hookexec.SessionStartFunc(func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
				return hookexec.SessionStartOutput{}, nil
			})}},
	} {
		remove, err := s.sessionHook(h.id, h.h)
		if err != nil {
			return err
		}
		removes = append(removes, remove)
	}
	if _, err := a.Restore(ctx, "beta"); err != nil {
		return err
	}
	for _, remove := range removes {
		remove()
	}

	// Compaction of beta: boundary, summary, SessionStart "compact".
	if _, err := e.Append(ctx, "beta", reprise.Text("assistant", "Retries back off exponentially, capped at a minute.")); err != nil {
		return err
	}
	if _, err := a.Compact(ctx, "The user asked for a retry design; it backs off exponentially."); err != nil {
		return err
	}

	// Stops: blocked by a command hook, then capped, then allowed.
	removeBlock, err := s.sessionHook("beta", hookexec.Hook{Event: hookexec.Stop,
		Body: hookexec.Command{Line: `printf '%s\n' '{"decision":"block","reason":"the refund test still fails"}'`}})
	if err != nil {
		return err
	}
	for range 2 {
		if _, err := a.Stop(ctx); err != nil {
			return err
		}
	}
	removeBlock()
	if _, err := a.Stop(ctx); err != nil {
		return err
	}

	// Fork alpha while a save of beta fails: the message stays pending.
	if _, err := e.Buffer(ctx, "beta", reprise.Text("user", "Write it down before we switch.")); err != nil {
		return err
	}
	s.store.failNextSave()
	if _, err := a.Fork(ctx, "alpha", ""); err != nil {
		return err
	}

	// Clear the fork, then New.
	if _, err := a.Clear(ctx); err != nil {
		return err
	}
	if _, err := a.New(ctx, "gamma", "/"); err != nil {
		return err
	}

	// Resume gamma -> imported while a SessionEnd hook cancels the
	// restore's context: the hooks still running are cancelled, their
	// outcome recorded, and the restore stops there, interrupted; the End
	// below finishes it first.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	removes = removes[:0]
	for _, h := range []struct {
		id string
		h  hookexec.Hook
	}{
		{"gamma", hookexec.Hook{Event: hookexec.SessionEnd, Name: "end-cancels",
			Body: hookexec.SessionEndFunc(func(ctx context.Context, _ hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
				cancel()
				<-ctx.Done()
				return hookexec.SessionEndOutput{}, ctx.Err()
			})}},
		{"gamma", hookexec.Hook{Event: hookexec.SessionEnd, Body: hookexec.Command{Line: "sleep 5"}, Timeout: time.Minute}},
		{"imported", hookexec.Hook{Event: hookexec.SessionStart, Name: "start-after-cancel",
			Body: hookexec.SessionStartFunc(func(ctx context.Context, _ hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
				<-ctx.Done()
				return hookexec.SessionStartOutput{}, ctx.Err()
			})}},
	} {
		remove, err := s.sessionHook(h.id, h.h)
		if err != nil {
			return err
		}
		removes = append(removes, remove)
	}
	if _, err := a.Restore(rctx, "imported"); !errors.Is(err, reprise.ErrInterrupted) {
		return fmt.Errorf("restore whose context a hook cancels: %v; want ErrInterrupted", err)
	}
	for _, remove := range removes {
		remove()
	}

	// End: function SessionEnd hooks get the final message and error.
	_, err = a.End(ctx, reprise.ReasonError, reprise.EndOptions{FinalMessage: "Stopping here.", Error: "the model API returned 529"})
	return err
}

// crashed is the history of an agent whose processes died while hooks
// ran, three times: during SessionStart hooks, during SessionEnd hooks and
// during Stop hooks. Each time the steps up to and including the intent
// are appended to the store as the dying process had appended them. The
// Engine then meets the intent with no outcome, closes it as interrupted
// and rolls on: the first time when it reads the agent for the first time,
// as after a restart; the other two at the agent's next call, which reads
// what was appended since, as a host sharing the store does.
func (s *script) crashed() error {
	ctx, e := s.ctx, s.e
	const agent = "crashed"
	stream := projection.AgentStream(agent)
	var head uint64
	appendSteps := func(rid string, steps ...schema.Payload) error {
		recs := make([]eventlog.Record, len(steps))
		for i, p := range steps {
			rec, err := schema.NewRecord(stream, p, s.now().UnixNano(), rid)
			if err != nil {
				return err
			}
			recs[i] = rec
		}
		evs, err := e.Store().Append(ctx, []eventlog.Expect{{Stream: stream, Seq: head}}, recs)
		if err != nil {
			return err
		}
		head = evs[len(evs)-1].Seq
		return nil
	}
	hookNames := func(event hookexec.Event, value, id string) []string {
		return hookexec.Names(e.HooksFor(ctx, event, value, id))
	}

	// A startup restore of alpha that died while its SessionStart hooks
	// ran; Agent rolls it forward on first use.
	alpha, err := e.Session(ctx, "alpha")
	if err != nil {
		return err
	}
	alphaHead, err := e.Store().Head(ctx, projection.SessionStream("alpha"))
	if err != nil {
		return err
	}
	if err := appendSteps(s.newID(),
		&schema.SessionLoaded{Session: "alpha", Source: reprise.SourceStartup, Messages: alpha.Messages, Head: alphaHead},
		&schema.SessionStartHookStarted{Session: "alpha", Source: reprise.SourceStartup,
			Hooks: hookNames(hookexec.SessionStart, string(reprise.SourceStartup), "alpha")},
	); err != nil {
		return err
	}
	a, err := e.Agent(ctx, agent)
	if err != nil {
		return err
	}
	if head, err = e.Store().Head(ctx, stream); err != nil {
		return err
	}

	// A resume alpha -> beta that died while alpha's SessionEnd hook ran;
	// the agent's next call rolls it forward, then stops.
	removeEnd, err := s.sessionHook("alpha", hookexec.Hook{Event: hookexec.SessionEnd, Body: hookexec.Command{Line: `echo "never finished"`}})
	if err != nil {
		return err
	}
	if err := appendSteps(s.newID(),
		&schema.SaveAttempted{From: "alpha", To: "beta"},
		&schema.SessionEndHookStarted{Session: "alpha", Reason: reprise.ReasonResume,
			Hooks: hookNames(hookexec.SessionEnd, string(reprise.ReasonResume), "alpha")},
	); err != nil {
		return err
	}
	removeEnd()
	if _, err := a.Stop(ctx); err != nil {
		return err
	}
	if head, err = e.Store().Head(ctx, stream); err != nil {
		return err
	}

	// A Stop that died while its hooks ran; the next call, an End, closes
	// it as interrupted first. The End saves beta's pending message.
	if err := appendSteps(s.newID(),
		&schema.StopHookStarted{Session: "beta", Hooks: hookNames(hookexec.Stop, "", "beta")},
	); err != nil {
		return err
	}
	_, err = a.End(ctx, reprise.ReasonUserExit, reprise.EndOptions{FinalMessage: "Bye."})
	return err
}

// deletion is what deleting sessions writes. Agent cleaner works on
// secret, which is deleted and vacuumed: its
// events go, leaving gaps and the tombstone, and its text is blanked in
// the agent's events. Then another host deletes raced, the agent's current
// session, between the agent's check and the intent of its Prompt (the
// intent, naming the hook that agent's host had, is appended here as that
// agent would have, and the process running it dies); the agent's next
// call ends the prompt on its own stream, marked deleted, and fails, and
// a Start of kept moves it on. Stale is deleted last and not vacuumed, so
// its events stay behind its tombstone.
func (s *script) deletion() error {
	ctx, e := s.ctx, s.e
	for _, id := range []string{"secret", "stale", "raced", "kept"} {
		if _, err := e.CreateSession(ctx, id, "/"); err != nil {
			return err
		}
	}
	for _, m := range []struct{ id, role, text string }{
		{"secret", "user", "The staging password is hunter2."},
		{"secret", "assistant", "Noted; rotate it after the demo."},
		{"stale", "user", "An old question nobody needs."},
		{"raced", "user", "A conversation another host deletes."},
	} {
		if _, err := e.Append(ctx, m.id, reprise.Text(m.role, m.text)); err != nil {
			return err
		}
	}
	a, err := e.Agent(ctx, "cleaner")
	if err != nil {
		return err
	}
	if _, err := a.Start(ctx, "secret"); err != nil {
		return err
	}
	if _, err := a.Stop(ctx, reprise.WithStopReason("end_turn")); err != nil {
		return err
	}
	if _, err := a.Start(ctx, "raced"); err != nil {
		return err
	}
	if err := e.DeleteSession(ctx, "secret"); err != nil {
		return err
	}
	if _, err := e.Vacuum(ctx); err != nil {
		return err
	}

	if err := e.DeleteSession(ctx, "raced"); err != nil {
		return err
	}
	stream := projection.AgentStream("cleaner")
	head, err := e.Store().Head(ctx, stream)
	if err != nil {
		return err
	}
	intent, err := schema.NewRecord(stream, &schema.PromptHookStarted{Session: "raced", Prompt: "Summarize it.",
		PromptID: s.newID(), Hooks: []string{"echo on the other host"}}, s.now().UnixNano(), s.newID())
	if err != nil {
		return err
	}
	if _, err := e.Store().Append(ctx, []eventlog.Expect{{Stream: stream, Seq: head}}, []eventlog.Record{intent}); err != nil {
		return err
	}
	if _, err := a.Prompt(ctx, "Summarize it again."); !errors.Is(err, reprise.ErrSessionDeleted) {
		return fmt.Errorf("prompt on a deleted session: %v; want ErrSessionDeleted", err)
	}
	if _, err := a.Start(ctx, "kept"); err != nil {
		return err
	}
	return e.DeleteSession(ctx, "stale")
}
