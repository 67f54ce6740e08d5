package schema

// Redact blanks, in the agent-stream payload p, every copy of text that
// belongs to one of the sessions in gone: hook output and context, hook
// errors and stderr, prompts, summaries, final messages and block reasons
// of steps run on those sessions. What the lifecycle needs stays: types,
// sessions, sources, reasons, hook names, statuses, exit codes, durations
// and message uuids, so the agent's log still folds and audits the same.
// It reports whether it changed p.
func Redact(p Payload, gone func(session string) bool) bool {
	switch p := p.(type) {
	case *SaveAttempted:
		changed := false
		if gone(p.From) {
			changed = blank(&p.FinalMessage, &p.EndError) || changed
		}
		if gone(p.To) {
			changed = blank(&p.Prompt) || changed
		}
		return changed
	case *SessionEndHookRan:
		return gone(p.Session) && redactOutcomes(p.Outcomes)
	case *SessionLoaded:
		return gone(p.Session) && blank(&p.Prompt)
	case *SessionStartHookRan:
		if !gone(p.Session) {
			return false
		}
		outs := redactOutcomes(p.Outcomes)
		return blank(&p.Context, &p.Env) || outs
	case *StopHookStarted:
		return gone(p.Session) && blank(&p.StopReason)
	case *StopHookRan:
		if !gone(p.Session) {
			return false
		}
		outs := redactOutcomes(p.Outcomes)
		return blank(&p.Reason, &p.Context) || outs
	case *PromptHookStarted:
		return gone(p.Session) && blank(&p.Prompt)
	case *PromptHookRan:
		if !gone(p.Session) {
			return false
		}
		outs := redactOutcomes(p.Outcomes)
		return blank(&p.Context, &p.Reason) || outs
	case *PreCompactHookStarted:
		return gone(p.Session) && blank(&p.Instructions, &p.Summary)
	case *PreCompactHookRan:
		if !gone(p.Session) {
			return false
		}
		outs := redactOutcomes(p.Outcomes)
		return blank(&p.Reason, &p.Instructions, &p.Summary) || outs
	case *ToolHookRan:
		if !gone(p.Session) {
			return false
		}
		outs := redactOutcomes(p.Outcomes)
		replaced := p.Replacement != nil
		p.Replacement = nil
		return blank(&p.Reason, &p.Context) || outs || replaced
	case *AsyncHookEnded:
		if !gone(p.Session) {
			return false
		}
		outs := []HookOutcome{p.Outcome}
		changed := redactOutcomes(outs)
		p.Outcome = outs[0]
		return blank(&p.Context) || changed
	case *HookEventStarted:
		if !gone(p.Session) {
			return false
		}
		held := p.Fields != nil
		p.Fields = nil
		return blank(&p.Value) || held
	case *HookEventRan:
		if !gone(p.Session) {
			return false
		}
		outs := redactOutcomes(p.Outcomes)
		held := p.Fields != nil || p.Specific != nil
		p.Fields, p.Specific = nil, nil
		return blank(&p.Value, &p.Reason, &p.Feedback, &p.Context, &p.StopReason, &p.SystemMessage, &p.Env) || outs || held
	case *ToolDecided:
		if !gone(p.Session) {
			return false
		}
		input := p.Input != nil
		p.Input = nil
		return blank(&p.Reason, &p.Context) || input
	}
	return false
}

// redactOutcomes blanks what hooks said, keeping what they did.
func redactOutcomes(outs []HookOutcome) bool {
	changed := false
	for i := range outs {
		o := &outs[i]
		if blank(&o.Error, &o.Stderr, &o.Summary, &o.Reason, &o.StopReason, &o.SystemMessage, &o.Request, &o.Answer) {
			changed = true
		}
		if o.Cleanup != nil || o.Config != nil || o.Specific != nil {
			o.Cleanup, o.Config, o.Specific, changed = nil, nil, nil, true
		}
	}
	return changed
}

// blank empties the strings fields point to and reports whether any held
// text.
func blank(fields ...*string) bool {
	changed := false
	for _, f := range fields {
		if *f != "" {
			*f, changed = "", true
		}
	}
	return changed
}
