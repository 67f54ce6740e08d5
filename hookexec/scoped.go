package hookexec

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
)

// Scoped holds session-scoped hooks: hooks added to one session at run time,
// removed by id, and dropped together when the session ends. Adding,
// removing and dropping are O(1); sessions do not contend with each other.
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
	order uint64
}

// identity says when two hooks are "equal" for deduplication: same event,
// matcher and command (and shell), or, for function hooks, same name.
func identity(h Hook) string {
	if c, ok := h.Body.(Command); ok {
		return string(h.Event) + "\x00" + h.Matcher.String() + "\x00cmd\x00" + c.Shell + "\x00" + c.Line
	}
	return string(h.Event) + "\x00" + h.Matcher.String() + "\x00func\x00" + h.Name
}

// Add gives session a hook and returns its id. Adding a hook equal to one
// the session already has returns the existing id and keeps one copy.
// Function hooks need a Name, which is their identity.
func (s *Scoped) Add(session string, h Hook) (string, error) {
	if !h.IsCommand() && h.Name == "" {
		return "", fmt.Errorf("%w: a session-scoped function hook needs a name", ErrBadHook)
	}
	if err := validate(h); err != nil {
		return "", err
	}
	if h.Name == "" {
		h.Name = h.CommandLine()
	}
	h.Source = "session"
	v, _ := s.sessions.LoadOrStore(session, &scopedSet{byID: map[string]scopedHook{}, byKey: map[string]string{}})
	set := v.(*scopedSet)
	set.mu.Lock()
	defer set.mu.Unlock()
	key := identity(h)
	if id, ok := set.byKey[key]; ok {
		return id, nil
	}
	n := s.next.Add(1)
	id := "sh-" + strconv.FormatUint(n, 10)
	set.byID[id] = scopedHook{hook: h, order: n}
	set.byKey[key] = id
	return id, nil
}

// Remove takes hook id away from session and reports whether it was there.
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
// ends.
func (s *Scoped) Drop(session string) { s.sessions.Delete(session) }

// Match returns session's hooks of event whose matcher selects value, in
// the order they were added.
func (s *Scoped) Match(session string, event Event, value string) []Hook {
	v, ok := s.sessions.Load(session)
	if !ok {
		return nil
	}
	set := v.(*scopedSet)
	set.mu.Lock()
	matched := make([]scopedHook, 0, len(set.byID))
	for _, sh := range set.byID {
		if sh.hook.Event == event && sh.hook.Matcher.Match(value) {
			matched = append(matched, sh)
		}
	}
	set.mu.Unlock()
	sort.Slice(matched, func(i, j int) bool { return matched[i].order < matched[j].order })
	out := make([]Hook, len(matched))
	for i, sh := range matched {
		out[i] = sh.hook
	}
	return out
}
