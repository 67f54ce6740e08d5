package jsonview

import "github.com/reprise-dev/reprise"

// Audit is the verdict of an audit and what it found.
type Audit struct {
	OK               bool `json:"ok"`
	Events           int  `json:"events"`
	Sessions         int  `json:"sessions"`
	Agents           int  `json:"agents"`
	Restores         int  `json:"restores"`
	HooksRun         int  `json:"hooks_run"`
	HooksFailed      int  `json:"hooks_failed"`
	HooksCancelled   int  `json:"hooks_cancelled"`
	HooksInterrupted int  `json:"hooks_interrupted"`
	// Interrupted names the runs whose hooks a dying process cut short.
	Interrupted []Run        `json:"interrupted"`
	Fires       []Fires      `json:"fires"`
	Violations  []Violation  `json:"violations"`
	InProgress  []InProgress `json:"in_progress"`
	// Unsendable are the messages that make a session one the Messages
	// API refuses.
	Unsendable []Violation `json:"unsendable"`
}

// Run is one run of an agent that ran hooks, by its id: a restore, Stop
// or prompt run, a tool call (lane "tool") or a fire ("fire").
type Run struct {
	Agent string `json:"agent"`
	ID    string `json:"id"`
	Lane  string `json:"lane,omitempty"`
}

// Fires counts the fires of one event the log records: how many ran,
// were blocked by their hooks or cut short by a dying process, and how
// their hooks ended, by status.
type Fires struct {
	Event       string         `json:"event"`
	Fired       int            `json:"fired"`
	Blocked     int            `json:"blocked"`
	Interrupted int            `json:"interrupted"`
	Hooks       map[string]int `json:"hooks"`
}

// InProgress is a step an agent's log ends inside, with the command that
// rolls it forward. Lane is "tool" or "fire" for the hooks of a tool call
// or a fire, whose id ID is, and absent for a lifecycle step.
type InProgress struct {
	Agent   string `json:"agent"`
	Stream  string `json:"stream"`
	Seq     uint64 `json:"seq"`
	ID      string `json:"id"`
	Lane    string `json:"lane,omitempty"`
	State   string `json:"state"`
	Detail  string `json:"detail"`
	Command string `json:"command"`
	// RunningIn names the process that holds the store, when the audit
	// read through it: the step may be running there, and Command is for
	// after it ends.
	RunningIn string `json:"running_in,omitempty"`
}

// Violation is a rule the log breaks, at an event.
type Violation struct {
	Stream string `json:"stream"`
	Seq    uint64 `json:"seq"`
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// NewAudit describes rep; ok is the verdict, finish returns the command
// that rolls forward what an agent has in progress, and runningIn names
// the process that holds the store, "" when the audit read it itself.
func NewAudit(rep *reprise.AuditReport, ok bool, finish func(agent string) string, runningIn string) Audit {
	out := Audit{
		OK: ok, Events: rep.Events, Sessions: rep.Sessions, Agents: rep.Agents,
		Restores: rep.Restores, HooksRun: rep.HooksRun, HooksFailed: rep.HooksFailed,
		HooksCancelled: rep.HooksCancelled, HooksInterrupted: rep.HooksInterrupted,
		Interrupted: make([]Run, len(rep.Interrupted)),
		Fires:       make([]Fires, len(rep.Fires)),
		Violations:  make([]Violation, len(rep.Violations)),
		InProgress:  make([]InProgress, len(rep.InProgress)),
	}
	for i, r := range rep.Interrupted {
		out.Interrupted[i] = Run{Agent: r.Agent, ID: r.ID, Lane: r.Lane}
	}
	for i, f := range rep.Fires {
		out.Fires[i] = Fires{Event: string(f.Event), Fired: f.Fired, Blocked: f.Blocked, Interrupted: f.Interrupted, Hooks: f.Hooks}
	}
	for i, p := range rep.InProgress {
		out.InProgress[i] = InProgress{Agent: p.Agent, Stream: p.Stream, Seq: p.Seq, ID: p.ID, Lane: p.Lane,
			State: p.State, Detail: p.Detail, Command: finish(p.Agent), RunningIn: runningIn}
	}
	for i, v := range rep.Violations {
		out.Violations[i] = Violation{Stream: v.Stream, Seq: v.Seq, Kind: v.Kind, Detail: v.Detail}
	}
	out.Unsendable = make([]Violation, len(rep.Unsendable))
	for i, v := range rep.Unsendable {
		out.Unsendable[i] = Violation{Stream: v.Stream, Seq: v.Seq, Kind: v.Kind, Detail: v.Detail}
	}
	return out
}
