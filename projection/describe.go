package projection

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/reprise-dev/reprise/schema"
)

// eventWord names, after a space, the event an intent's hooks run for
// when it is not the one its type says (SubagentStart, SubagentStop).
func eventWord(e schema.HookEvent) string {
	if e == "" {
		return ""
	}
	return " event=" + string(e)
}

// Describe summarises a payload in one line, as reprise log prints it after
// the event type: the fields that matter for that type, hook outcomes as
// [name:status ...], long text clipped. Scenario files use the same form.
func Describe(p schema.Payload) string {
	switch p := p.(type) {
	case *schema.SessionCreated:
		out := "cwd=" + p.Cwd
		if p.ImportedCwd != "" {
			out += " imported-cwd=" + p.ImportedCwd
		}
		if sub := p.Subagent; sub != nil {
			out += fmt.Sprintf(" subagent=%s type=%s of=%s call=%s", Word(sub.AgentID), Word(sub.Type), Word(sub.Session), Word(sub.ToolUseID))
		}
		return out
	case *schema.MessageAppended:
		m := p.Message
		meta := ""
		if m.IsMeta {
			meta = " meta"
		}
		if text := FirstText(m); text != "" || len(m.Content) == 0 {
			return fmt.Sprintf("%s%s %q", m.Role, meta, Clip(text, 60))
		}
		kinds := make([]string, len(m.Content))
		for i, b := range m.Content {
			kinds[i] = b.Type
		}
		return fmt.Sprintf("%s%s [%s]", m.Role, meta, strings.Join(kinds, " "))
	case *schema.TranscriptRecord:
		var rec struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(p.Record, &rec) != nil || rec.Type == "" {
			return "record"
		}
		return "record type=" + rec.Type
	case *schema.CompactBoundary:
		return fmt.Sprintf("compaction boundary, %d messages before it", p.PreMessages)
	case *schema.SaveAttempted:
		to := p.To
		if to == "" {
			to = "(end, reason " + string(p.Reason) + ")"
		}
		if p.Error != "" {
			return fmt.Sprintf("%s -> %s save failed: %s", p.From, to, p.Error)
		}
		return fmt.Sprintf("%s -> %s saved=%d", p.From, to, p.Saved)
	case *schema.SessionEndHookStarted:
		return fmt.Sprintf("session=%s reason=%s hooks=%s", p.Session, p.Reason, hookList(p.Hooks))
	case *schema.SessionEndHookRan:
		return fmt.Sprintf("session=%s reason=%s %s", p.Session, p.Reason, outcomes(p.Outcomes, p.Interrupted))
	case *schema.SessionLoaded:
		if p.Prompt != "" {
			return fmt.Sprintf("session=%s source=%s messages=%d prompt=%q", p.Session, p.Source, p.Messages, Clip(p.Prompt, 40))
		}
		return fmt.Sprintf("session=%s source=%s messages=%d", p.Session, p.Source, p.Messages)
	case *schema.SessionStartHookStarted:
		return fmt.Sprintf("session=%s source=%s%s hooks=%s", p.Session, p.Source, eventWord(p.Event), hookList(p.Hooks))
	case *schema.SessionStartHookRan:
		return fmt.Sprintf("session=%s source=%s %s context=%q", p.Session, p.Source, outcomes(p.Outcomes, p.Interrupted), Clip(p.Context, 40))
	case *schema.ContextInjected:
		out := "session=" + p.Session + " message=" + p.MessageUUID
		if p.MessageUUID == "" {
			out = "session=" + p.Session + " none"
		}
		if p.Initial != "" {
			out += " initial=" + p.Initial
		}
		return out
	case *schema.SessionCompacted:
		return "session=" + p.Session + " summary=" + p.SummaryUUID
	case *schema.SessionClosed:
		return "session=" + p.Session + " closed"
	case *schema.StopHookStarted:
		if p.Capped {
			return "session=" + p.Session + eventWord(p.Event) + " capped"
		}
		reason := ""
		if p.StopReason != "" {
			reason = " reason=" + p.StopReason
		}
		return fmt.Sprintf("session=%s%s active=%v%s hooks=%s", p.Session, eventWord(p.Event), p.Active, reason, hookList(p.Hooks))
	case *schema.PromptHookStarted:
		if p.Prompt == "" && p.PromptSHA256 != "" {
			return fmt.Sprintf("session=%s prompt=sha256:%.12s len=%d hooks=%s", p.Session, p.PromptSHA256, p.PromptLen, hookList(p.Hooks))
		}
		return fmt.Sprintf("session=%s prompt=%q hooks=%s", p.Session, Clip(p.Prompt, 40), hookList(p.Hooks))
	case *schema.PromptHookRan:
		switch {
		case p.Deleted:
			return fmt.Sprintf("session=%s %s, session deleted, prompt not kept", p.Session, outcomes(p.Outcomes, p.Interrupted))
		case p.Blocked:
			return fmt.Sprintf("session=%s blocked %s reason=%q", p.Session, outcomes(p.Outcomes, p.Interrupted), Clip(p.Reason, 40))
		case p.Interrupted:
			return fmt.Sprintf("session=%s %s, prompt not kept", p.Session, outcomes(p.Outcomes, p.Interrupted))
		}
		return fmt.Sprintf("session=%s %s message=%s context=%q", p.Session, outcomes(p.Outcomes, p.Interrupted), p.MessageUUID, Clip(p.Context, 40))
	case *schema.PreCompactHookStarted:
		return fmt.Sprintf("session=%s trigger=%s hooks=%s", p.Session, p.Trigger, hookList(p.Hooks))
	case *schema.PreCompactHookRan:
		out := fmt.Sprintf("session=%s %s", p.Session, outcomes(p.Outcomes, p.Interrupted))
		if p.Blocked {
			out = fmt.Sprintf("session=%s blocked %s reason=%q", p.Session, outcomes(p.Outcomes, p.Interrupted), Clip(p.Reason, 40))
		}
		if p.Instructions != "" {
			out += fmt.Sprintf(" instructions=%q", Clip(p.Instructions, 40))
		}
		if p.Summary != "" {
			out += fmt.Sprintf(" summary=%q", Clip(p.Summary, 40))
		}
		return out
	case *schema.StopHookRan:
		if p.Capped != "" {
			return fmt.Sprintf("session=%s capped: %s", p.Session, p.Capped)
		}
		if p.Deleted {
			return fmt.Sprintf("session=%s %s, session deleted, nothing queued", p.Session, outcomes(p.Outcomes, p.Interrupted))
		}
		out := fmt.Sprintf("session=%s blocked=%v %s", p.Session, p.Blocked, outcomes(p.Outcomes, p.Interrupted))
		if p.Context != "" {
			out += fmt.Sprintf(" context=%q", Clip(p.Context, 40))
		}
		return out
	case *schema.ImportStarted:
		if p.Bytes > 0 {
			return fmt.Sprintf("import of %d bytes", p.Bytes)
		}
		return "import"
	case *schema.ImportFinished:
		return fmt.Sprintf("import done, %d messages, %d other records, %d skipped lines, %d bytes", p.Messages, p.Records, p.Skipped, p.Bytes)
	case *schema.SessionDeleted:
		if p.Reason != "" {
			return fmt.Sprintf("deleted, %d messages, reason=%q", p.Messages, Clip(p.Reason, 40))
		}
		return fmt.Sprintf("deleted, %d messages", p.Messages)
	case *schema.Vacuumed:
		ids := make([]string, len(p.Sessions))
		events := 0
		for i, s := range p.Sessions {
			ids[i] = s.ID
			events += int(s.Last - s.First + 1)
		}
		return fmt.Sprintf("sessions=%s events=%d rewritten=%d files=%d", strings.Join(ids, ","), events, len(p.Rewritten), p.Files)
	case *schema.ToolHookStarted:
		return fmt.Sprintf("session=%s %s id=%s %s hooks=%s", p.Session, Word(p.Tool), Word(p.ToolUseID), p.Event, hookList(p.Hooks))
	case *schema.ToolHookRan:
		out := fmt.Sprintf("session=%s %s id=%s %s %s", p.Session, Word(p.Tool), Word(p.ToolUseID), p.Event, outcomes(p.Outcomes, p.Interrupted))
		if p.Decision != "" {
			out += fmt.Sprintf(" decision=%s reason=%q", p.Decision, Clip(p.Reason, 40))
		}
		if p.Context != "" {
			out += fmt.Sprintf(" context=%q", Clip(p.Context, 40))
		}
		return out
	case *schema.ToolDecided:
		out := fmt.Sprintf("session=%s %s id=%s %s", p.Session, Word(p.Tool), Word(p.ToolUseID), p.Decision)
		if p.Reason != "" {
			out += fmt.Sprintf(" reason=%q", Clip(p.Reason, 40))
		}
		if len(p.Input) > 0 {
			out += " input=" + Clip(string(p.Input), 40)
		}
		return out
	case *schema.AsyncHookEnded:
		out := fmt.Sprintf("session=%s %s async=%s %s", p.Session, p.Event, Word(p.Outcome.Async), outcomes([]schema.HookOutcome{p.Outcome}, false))
		if p.Context != "" {
			out += fmt.Sprintf(" context=%q", Clip(p.Context, 40))
		}
		if p.Rewake {
			out += " rewake"
		}
		return out
	case *schema.HookEventStarted:
		out := fmt.Sprintf("session=%s %s id=%s%s hooks=%s", p.Session, Word(string(p.Event)), Word(p.ID), fireValue(p.Value), hookList(p.Hooks))
		if status := strings.Join(slices.DeleteFunc(slices.Clone(p.Status), func(s string) bool { return s == "" }), "; "); status != "" {
			out += fmt.Sprintf(" status=%q", Clip(status, 40))
		}
		return out
	case *schema.HookEventRan:
		out := fmt.Sprintf("session=%s %s id=%s%s %s", p.Session, Word(string(p.Event)), Word(p.ID), fireValue(p.Value), outcomes(p.Outcomes, p.Interrupted))
		if p.Blocked {
			out += fmt.Sprintf(" blocked reason=%q", Clip(p.Reason, 40))
		}
		for _, f := range []struct{ name, text string }{{"feedback", p.Feedback}, {"context", p.Context}, {"specific", string(p.Specific)}} {
			if f.text != "" {
				out += fmt.Sprintf(" %s=%q", f.name, Clip(f.text, 40))
			}
		}
		if p.Halt {
			out += fmt.Sprintf(" halt=%q", Clip(p.StopReason, 40))
		}
		if p.MessageUUID != "" {
			out += " message=" + Word(p.MessageUUID)
		}
		return out
	case *schema.AsyncContextInjected:
		return fmt.Sprintf("session=%s runs=%d message=%s", p.Session, len(p.Runs), p.MessageUUID)
	case *schema.ToolResultRecorded:
		result := "result"
		if p.Failed {
			result = "failure"
		}
		if p.Interrupted {
			result = "interrupted"
		}
		return fmt.Sprintf("session=%s %s id=%s %s=%s hooks=%s", p.Session, Word(p.Tool), Word(p.ToolUseID), result, p.MessageUUID, hookList(p.Hooks))
	}
	return ""
}

// Word returns s as one printable word of a line: as it is when it is
// one, non-empty and of printable characters without spaces, else quoted
// with Go's escapes, so that a tool name or id with a newline or a
// terminal escape sequence can neither forge a line nor reach a terminal.
func Word(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) || r == '"' {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// fireValue is the value a fire's matchers selected on, as " value=V",
// or "" when its event has no matcher.
func fireValue(v string) string {
	if v == "" {
		return ""
	}
	return " value=" + Word(v)
}

// hookList joins hook names, or says there are none.
func hookList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// outcomes lists hook outcomes as name:status, in brackets; a hook that
// denied or blocked is name:deny or name:block with its reason.
func outcomes(list []schema.HookOutcome, interrupted bool) string {
	parts := make([]string, len(list))
	for i, o := range list {
		status := string(o.Status)
		said := o.Decision == "block" || o.Decision == "deny"
		if said {
			status = o.Decision // it said no, in its decision's word, as the CLI and the web view list it
		}
		parts[i] = o.Name + ":" + status
		if o.Status == schema.HookAsync {
			parts[i] += "=" + Word(o.Async)
		}
		if o.Summary != "" {
			parts[i] += fmt.Sprintf(" summary=%q", Clip(o.Summary, 40))
		}
		if len(o.Cleanup) > 0 {
			parts[i] += fmt.Sprintf(" cleanup=%q", strings.Join(o.Cleanup, "; "))
		}
		if said {
			parts[i] += fmt.Sprintf(" reason=%q", Clip(o.Reason, 40))
		}
		if len(o.Config) > 0 {
			parts[i] += " config=" + Clip(string(o.Config), 60)
		}
		if o.Suppress {
			parts[i] += " suppress"
		}
	}
	s := "[" + strings.Join(parts, " ") + "]"
	if interrupted {
		s += " interrupted"
	}
	return s
}

// FirstText returns the text of m's first text block.
func FirstText(m schema.Message) string {
	for _, b := range m.Content {
		if b.Type == "text" {
			return b.Text
		}
	}
	return ""
}

// Clip shortens s to n characters on one line.
func Clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
