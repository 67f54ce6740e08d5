package jsonview

import (
	"encoding/json"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// Restore is a restore's report.
type Restore struct {
	Agent         string      `json:"agent"`
	Restored      bool        `json:"restored"`
	RestoreID     string      `json:"restore_id,omitempty"`
	Source        string      `json:"source,omitempty"`
	From          string      `json:"from,omitempty"`
	To            string      `json:"to"`
	InitialPrompt string      `json:"initial_prompt,omitempty"`
	Saved         int         `json:"saved"`
	SaveError     string      `json:"save_error,omitempty"`
	SessionEnd    *HookRun    `json:"session_end,omitempty"`
	PreCompact    *PreCompact `json:"pre_compact,omitempty"`
	SessionStart  *HookRun    `json:"session_start,omitempty"`
	Context       string      `json:"context"`
	Injected      string      `json:"injected_message,omitempty"`
	Env           string      `json:"env,omitempty"`
	EnvFile       string      `json:"env_file,omitempty"`
	// ModifiedConfig merges the modifiedConfig objects of the SessionStart
	// hooks, a later hook winning a key; absent when none returned one.
	ModifiedConfig json.RawMessage `json:"modifiedConfig,omitempty"`
	Began          string          `json:"began,omitempty"`
	Ended          string          `json:"ended,omitempty"`
}

// HookRun is one hook event of a restore.
type HookRun struct {
	Source      string    `json:"source,omitempty"` // SessionStart
	Reason      string    `json:"reason,omitempty"` // SessionEnd
	Hooks       []Outcome `json:"hooks"`
	Interrupted bool      `json:"interrupted"`
	// SessionEnd only: a hook asked the host not to show the end.
	SuppressOutput *bool `json:"suppressOutput,omitempty"`
}

// PreCompact is the PreCompact run of a compaction that had hooks.
type PreCompact struct {
	Trigger      string    `json:"trigger"`
	Instructions string    `json:"instructions,omitempty"`
	Hooks        []Outcome `json:"hooks"`
	Blocked      bool      `json:"blocked"`
	Reason       string    `json:"reason,omitempty"`
	Interrupted  bool      `json:"interrupted"`
}

// Outcome is what one hook did. The keys that carry a field of a hook
// contract keep the contract's name: a SessionEnd outcome always has
// sessionSummary, cleanupActions and suppressOutput, a SessionStart one
// modifiedConfig (null when the hook returned none).
type Outcome struct {
	Name       string  `json:"name"`
	Source     string  `json:"source"`
	Status     string  `json:"status"`
	ExitCode   int     `json:"exit_code"`
	DurationMS float64 `json:"duration_ms"`
	Error      string  `json:"error,omitempty"`
	Stderr     string  `json:"stderr,omitempty"`
	ContextLen int     `json:"context_len"`
	Dropped    int64   `json:"dropped,omitempty"`
	// Stop, UserPromptSubmit and PreCompact: "block" and why; the tool
	// events: the hook's decision (allow, deny, ask; block after the
	// tool) and why.
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Type is the hook's type when it is http, mcp_tool, prompt or agent;
	// Request what a prompt, agent or mcp_tool hook asked, Answer what an
	// http, prompt, agent or mcp_tool hook answered.
	Type    string `json:"type,omitempty"`
	Request string `json:"request,omitempty"`
	Answer  string `json:"answer,omitempty"`

	ModifiedConfig *json.RawMessage `json:"modifiedConfig,omitempty"` // SessionStart
	SessionSummary *string          `json:"sessionSummary,omitempty"` // SessionEnd
	CleanupActions *[]string        `json:"cleanupActions,omitempty"` // SessionEnd
	SuppressOutput *bool            `json:"suppressOutput,omitempty"` // SessionEnd
}

// NewOutcomes describes the outcomes of hooks of event.
func NewOutcomes(event hookexec.Event, list []schema.HookOutcome) []Outcome {
	out := make([]Outcome, len(list))
	for i, o := range list {
		x := Outcome{
			Name: o.Name, Source: o.Source, Status: o.Status, ExitCode: o.ExitCode,
			DurationMS: float64(o.Duration) / float64(time.Millisecond),
			Error:      o.Error, Stderr: o.Stderr, ContextLen: o.ContextLen, Dropped: o.Dropped,
			Decision: o.Decision, Reason: o.Reason, Type: o.Type, Request: o.Request, Answer: o.Answer,
		}
		switch event {
		case hookexec.SessionStart:
			config := json.RawMessage(o.Config)
			x.ModifiedConfig = &config // a nil one is null
		case hookexec.SessionEnd:
			cleanup := o.Cleanup
			if cleanup == nil {
				cleanup = []string{}
			}
			summary, suppress := o.Summary, o.Suppress
			x.SessionSummary, x.CleanupActions, x.SuppressOutput = &summary, &cleanup, &suppress
		}
		out[i] = x
	}
	return out
}

// NewRestore describes restore r of agent; a nil r is a restore to
// session to that did nothing.
func NewRestore(agent, to string, r *reprise.Transition) Restore {
	if r == nil {
		return Restore{Agent: agent, To: to}
	}
	out := Restore{
		Agent: agent, Restored: true, RestoreID: r.ID, Source: string(r.Source), From: r.From, To: r.To,
		InitialPrompt: r.InitialPrompt, Saved: r.Saved, SaveError: r.SaveError,
		SessionStart: &HookRun{Source: string(r.Source), Hooks: NewOutcomes(hookexec.SessionStart, r.StartOutcomes), Interrupted: r.StartInterrupted},
		Context:      r.Context, Injected: r.InjectedUUID, Env: r.Env, EnvFile: r.EnvFile, ModifiedConfig: r.ModifiedConfig,
		Began: FormatTime(r.Began), Ended: FormatTime(r.Ended),
	}
	if r.EndReason != "" { // the agent left a session
		suppress := r.SuppressOutput
		out.SessionEnd = &HookRun{Reason: string(r.EndReason), Hooks: NewOutcomes(hookexec.SessionEnd, r.EndOutcomes),
			Interrupted: r.EndInterrupted, SuppressOutput: &suppress}
	}
	if r.Trigger != "" || len(r.PreCompactHooks) > 0 { // a compaction that had PreCompact hooks
		out.PreCompact = &PreCompact{Trigger: r.Trigger, Instructions: r.Instructions,
			Hooks:   NewOutcomes(hookexec.PreCompact, r.PreCompactOutcomes),
			Blocked: r.PreCompactBlocked, Reason: r.PreCompactReason, Interrupted: r.PreCompactInterrupted}
	}
	if r.To == "" || r.PreCompactBlocked { // an End, or a blocked compaction: no session started
		out.SessionStart = nil
	}
	return out
}
