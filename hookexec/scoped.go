package hookexec

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/reprise-dev/reprise/schema"
)

// ScopedSource is the Source of every session-scoped hook, in the hooks
// Match returns and so in their outcomes. Settle recognises the outcomes of
// a session's scoped hooks by it.
const ScopedSource = "session"

// ScopedOptions are what a session-scoped hook may carry besides the hook,
// after Claude Code's session hooks.
type ScopedOptions struct {
	// ID is the id the caller chooses for the hook; "" has one generated
	// ("sh-" and a number).
	ID string
	// ErrorMessage, when not empty, replaces the error text of the hook's
	// outcomes that are not ok (Claude Code's errorMessage).
	ErrorMessage string
	// Once removes the hook after its first ok outcome.
	Once bool
	// OnSuccess is called in process, by Settle, with each ok outcome of
	// the hook (Claude Code's onHookSuccess). It runs on the goroutine that
	// calls Settle, so it should return quickly; a panic in it is recovered
	// and ignored. It is never recorded in the log, so it is not called
	// again for a run that a crash interrupted.
	OnSuccess func(schema.HookOutcome)
}

// ScopedHook is one session-scoped hook, as List returns it.
type ScopedHook struct {
	ID      string
	Hook    Hook
	Options ScopedOptions // ID repeats the hook's id
}

// Scoped holds session-scoped hooks: hooks added to one session at run time,
// removed by id, and dropped together when the session ends. Adding,
// removing and dropping are O(1); sessions do not contend with each other.
// The zero value is ready to use, and all methods are safe for concurrent
// use.
type Scoped struct {
	sessions sync.Map // session id -> *scopedSet
	next     atomic.Uint64
}

type scopedSet struct {
	mu    sync.Mutex
	byID  map[string]scopedHook
	byKey map[string]string // identity -> id
}

type scopedHook struct {
	hook  Hook
	opts  ScopedOptions
	order uint64
}

// identity says when two hooks are "equal" for deduplication: same event,
// matcher and command (and shell). Function hooks are never equal: each
// added one is its own, named or not, told apart by its id.
func identity(h Hook) string {
	if c, ok := h.Body.(Command); ok {
		return string(h.Event) + "\x00" + h.Matcher.String() + "\x00cmd\x00" + c.Shell + "\x00" + c.Line
	}
	if h.configured() {
		return string(h.Event) + "\x00" + h.Matcher.String() + "\x00" + string(h.Type()) + "\x00" + dedupeKey(h)
	}
	return "func\x00" + h.scoped
}

// Add gives session a hook and returns its id. Adding a command hook equal
// to one the session already has returns the existing id and keeps one
// copy; every function hook added is its own. It is AddWith with no
// options.
func (s *Scoped) Add(session string, h Hook) (string, error) {
	return s.AddWith(session, h, ScopedOptions{})
}

// AddWith gives session a hook with options o and returns its id: o.ID
// when it is set, else a generated one. A command hook equal to one the
// session already has (same event, matcher and command) is not added
// again: the existing hook's id is returned and its options stand,
// whatever o says. Function hooks are never merged, even when they share
// a name: each has its own id (an unnamed one is named by it). An o.ID
// that names another hook of the session is an error matching
// ErrHookIDInUse; ids of different sessions are independent. The hook's
// Source becomes ScopedSource.
func (s *Scoped) AddWith(session string, h Hook, o ScopedOptions) (string, error) {
	if err := validate(h); err != nil {
		return "", err
	}
	if h.Name == "" && h.configured() {
		h.Name = h.defaultName()
	}
	h.Source = ScopedSource
	v, _ := s.sessions.LoadOrStore(session, &scopedSet{byID: map[string]scopedHook{}, byKey: map[string]string{}})
	set := v.(*scopedSet)
	set.mu.Lock()
	defer set.mu.Unlock()
	if h.configured() {
		if id, ok := set.byKey[identity(h)]; ok {
			return id, nil
		}
	}
	id := o.ID
	if id != "" && set.taken(id) {
		return "", fmt.Errorf("%w: session %s already has a hook %q", ErrHookIDInUse, session, id)
	}
	n := s.next.Add(1)
	if id == "" {
		id = "sh-" + strconv.FormatUint(n, 10)
	}
	for set.taken(id) { // a caller chose an id that looks generated
		id = "sh-" + strconv.FormatUint(s.next.Add(1), 10)
	}
	o.ID = id
	if !h.configured() {
		h.scoped = id
		if h.Name == "" {
			h.Name = id
		}
	}
	set.byID[id] = scopedHook{hook: h, opts: o, order: n}
	set.byKey[identity(h)] = id
	return id, nil
}

func (set *scopedSet) taken(id string) bool {
	_, ok := set.byID[id]
	return ok
}

// Remove takes hook id away from session and reports whether it was there.
// AddFrontmatter adds to session, as session-scoped hooks, the hooks that
// the frontmatter of a skill or subagent configures, for as long as the
// skill or subagent is active: hooks is the frontmatter's "hooks" value as
// JSON (a host that reads YAML frontmatter gives it converted), in the
// shape of a settings file's "hooks" ({EVENT: [{matcher, hooks: [...]}]}),
// and source names the file, such as "skill:deploy". Unlike in settings
// files, a hook's "once" is honoured: it is removed after its first ok
// outcome. It returns the hooks' ids, for Remove when the skill ends; on
// an error (ErrBadConfig naming source) nothing is added.
func (s *Scoped) AddFrontmatter(session, source string, hooks json.RawMessage) ([]string, error) {
	wrapped := append(append([]byte(`{"hooks":`), hooks...), '}')
	parsed, err := parseSettings(wrapped, source, source)
	if err != nil {
		return nil, err
	}
	for _, h := range parsed {
		if err := validate(h); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadConfig, source, err)
		}
	}
	ids := make([]string, len(parsed))
	for i, h := range parsed {
		// Valid, and with no id asked for: AddWith cannot fail.
		ids[i], _ = s.AddWith(session, h, ScopedOptions{Once: h.once})
	}
	return ids, nil
}

func (s *Scoped) Remove(session, id string) bool {
	v, ok := s.sessions.Load(session)
	if !ok {
		return false
	}
	set := v.(*scopedSet)
	set.mu.Lock()
	defer set.mu.Unlock()
	sh, ok := set.byID[id]
	if !ok {
		return false
	}
	delete(set.byID, id)
	delete(set.byKey, identity(sh.hook))
	return true
}

// Drop removes every hook of session; the Engine calls it when the session
// ends, after it has settled the outcomes of the session's last run.
func (s *Scoped) Drop(session string) { s.sessions.Delete(session) }

// Match returns session's hooks of event whose matcher selects value, in
// the order they were added. Their Source is ScopedSource.
func (s *Scoped) Match(session string, event Event, value string) []Hook {
	matched := s.collect(session, func(sh scopedHook) bool {
		return sh.hook.Event == event && sh.hook.Selects(value)
	})
	out := make([]Hook, len(matched))
	for i, sh := range matched {
		out[i] = sh.hook
	}
	return out
}

// List returns session's hooks of event, or of every event when event is
// "", with their ids and options, in the order they were added (Claude
// Code's getSessionHooks). The slice is the caller's.
func (s *Scoped) List(session string, event Event) []ScopedHook {
	matched := s.collect(session, func(sh scopedHook) bool {
		return event == "" || sh.hook.Event == event
	})
	if len(matched) == 0 {
		return nil
	}
	out := make([]ScopedHook, len(matched))
	for i, sh := range matched {
		out[i] = ScopedHook{ID: sh.opts.ID, Hook: sh.hook, Options: sh.opts}
	}
	return out
}

// ListFunctions is List of session's function hooks only, those with a
// Go body (Claude Code's getSessionFunctionHooks): what a host that runs
// its own command hooks still has to run itself.
func (s *Scoped) ListFunctions(session string, event Event) []ScopedHook {
	return slices.DeleteFunc(s.List(session, event), func(sh ScopedHook) bool { return sh.Hook.configured() })
}

// collect returns session's hooks that keep selects, in the order they
// were added.
func (s *Scoped) collect(session string, keep func(scopedHook) bool) []scopedHook {
	v, ok := s.sessions.Load(session)
	if !ok {
		return nil
	}
	set := v.(*scopedSet)
	set.mu.Lock()
	matched := make([]scopedHook, 0, len(set.byID))
	for _, sh := range set.byID {
		if keep(sh) {
			matched = append(matched, sh)
		}
	}
	set.mu.Unlock()
	sort.Slice(matched, func(i, j int) bool { return matched[i].order < matched[j].order })
	return matched
}

// Settle applies the options of session's scoped hooks to the outcomes of
// a run: outcomes[i] is the outcome of hooks[i] (extra outcomes, or hooks
// without one, are left as they are). The Engine calls it after every run
// of a session's hooks, with the hooks it ran and their outcomes, before it
// records them, and, when the session ends, before Drop.
//
// A hook is one of session's scoped hooks when its Source is ScopedSource
// and the session still holds a hook equal to it (same event, matcher and
// command, or function name); the options are the ones that hook has now.
// Then:
//   - an outcome whose status is not ok gets ErrorMessage as its Error,
//     when ErrorMessage is set;
//   - an ok outcome is passed to OnSuccess, after every outcome is settled
//     and outside any lock, in hook order; a panic in OnSuccess is
//     recovered and ignored;
//   - an ok outcome of a Once hook removes the hook, so that one of two
//     concurrent runs removes it and only that one calls its OnSuccess.
//
// Settle returns a new slice (nil for no outcomes) and does not modify
// outcomes; other hooks' outcomes are copied unchanged.
func (s *Scoped) Settle(session string, hooks []Hook, outcomes []schema.HookOutcome) []schema.HookOutcome {
	if len(outcomes) == 0 {
		return nil
	}
	out := append([]schema.HookOutcome(nil), outcomes...)
	v, ok := s.sessions.Load(session)
	if !ok {
		return out
	}
	set := v.(*scopedSet)
	type success struct {
		fn func(schema.HookOutcome)
		o  schema.HookOutcome
	}
	var successes []success
	set.mu.Lock()
	for i := range min(len(hooks), len(out)) {
		if hooks[i].Source != ScopedSource {
			continue
		}
		key := identity(hooks[i])
		id, ok := set.byKey[key]
		if !ok {
			continue // removed meanwhile, or a Once hook another run settled
		}
		opts := set.byID[id].opts
		if out[i].Status != schema.HookOK {
			if opts.ErrorMessage != "" {
				out[i].Error = opts.ErrorMessage
			}
			continue
		}
		if d := out[i].Decision; d == "block" || d == Deny {
			continue // it blocked: not a success
		}
		if opts.OnSuccess != nil {
			o := out[i]
			o.Cleanup = slices.Clone(o.Cleanup) // the callback's own
			successes = append(successes, success{opts.OnSuccess, o})
		}
		if opts.Once {
			delete(set.byID, id)
			delete(set.byKey, key)
		}
	}
	set.mu.Unlock()
	for _, sc := range successes {
		callOnSuccess(sc.fn, sc.o)
	}
	return out
}

// callOnSuccess calls fn with o, ignoring a panic: a host's callback must
// not break the run that settled it.
func callOnSuccess(fn func(schema.HookOutcome), o schema.HookOutcome) {
	defer func() { _ = recover() }()
	fn(o)
}
