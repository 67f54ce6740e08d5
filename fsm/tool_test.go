package fsm_test

import (
	"errors"
	"testing"

	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/schema"
)

// TestToolTableAcceptsExactlyTheLegalSteps checks every (state, label)
// pair of a tool call against the hand-written list, so that no decision
// or result can be recorded twice for one tool_use id, nor the hooks run
// again.
func TestToolTableAcceptsExactlyTheLegalSteps(t *testing.T) {
	legal := map[[2]string]fsm.State{
		{"none", string(fsm.ToolPreHookStarted)}:                fsm.ToolPreHooks,
		{"pre-hooks", string(fsm.ToolPreHookRan)}:               fsm.ToolHooksRan,
		{"none", string(fsm.ToolPermissionHookStarted)}:         fsm.ToolPermissionHooks,
		{"hooks-ran", string(fsm.ToolPermissionHookStarted)}:    fsm.ToolPermissionHooks,
		{"permission-hooks", string(fsm.ToolPermissionHookRan)}: fsm.ToolHooksRan,
		{"none", string(fsm.ToolDecidedAllow)}:                  fsm.ToolAllowed,
		{"hooks-ran", string(fsm.ToolDecidedAllow)}:             fsm.ToolAllowed,
		{"none", string(fsm.ToolDecidedAsk)}:                    fsm.ToolAsked,
		{"hooks-ran", string(fsm.ToolDecidedAsk)}:               fsm.ToolAsked,
		{"asked", string(fsm.ToolDecidedAllow)}:                 fsm.ToolAllowed,
		{"asked", string(fsm.ToolDecidedDeny)}:                  fsm.ToolDone,
		{"asked", string(fsm.ToolResultWithHooks)}:              fsm.ToolPostHooks,
		{"asked", string(fsm.ToolResult)}:                       fsm.ToolDone,
		{"none", string(fsm.ToolDecidedDeny)}:                   fsm.ToolDone,
		{"hooks-ran", string(fsm.ToolDecidedDeny)}:              fsm.ToolDone,
		{"decided", string(fsm.ToolResultWithHooks)}:            fsm.ToolPostHooks,
		{"decided", string(fsm.ToolResult)}:                     fsm.ToolDone,
		{"post-hooks", string(fsm.ToolPostHookRan)}:             fsm.ToolDone,
		{"post-hooks", string(fsm.ToolFailureHookRan)}:          fsm.ToolDone,
	}
	states := []fsm.State{fsm.NoTool, fsm.ToolPreHooks, fsm.ToolPermissionHooks, fsm.ToolHooksRan, fsm.ToolAsked, fsm.ToolAllowed, fsm.ToolPostHooks, fsm.ToolDone}
	labels := []fsm.Event{fsm.ToolPreHookStarted, fsm.ToolPermissionHookStarted, fsm.ToolPreHookRan, fsm.ToolPermissionHookRan,
		fsm.ToolPostHookRan, fsm.ToolFailureHookRan, fsm.ToolDecidedAllow, fsm.ToolDecidedAsk, fsm.ToolDecidedDeny,
		fsm.ToolResultWithHooks, fsm.ToolResult, "ToolDecided/maybe"}
	for _, s := range states {
		for _, e := range labels {
			next, err := fsm.ApplyTool(s, e)
			want, ok := legal[[2]string{string(s), string(e)}]
			switch {
			case ok && (err != nil || next != want):
				t.Errorf("ApplyTool(%s, %s) = %s, %v; want %s", s, e, next, err, want)
			case !ok && (!errors.Is(err, fsm.ErrIllegalTransition) || next != s):
				t.Errorf("ApplyTool(%s, %s) = %s, %v; want it refused", s, e, next, err)
			}
		}
	}
}

// TestToolEventOfLabelsEachPayload checks the label of each tool payload.
func TestToolEventOfLabelsEachPayload(t *testing.T) {
	tests := []struct {
		p    schema.Payload
		want fsm.Event
	}{
		{&schema.ToolHookStarted{Event: schema.HookPreToolUse}, fsm.ToolPreHookStarted},
		{&schema.ToolHookRan{Event: schema.HookPermissionRequest}, fsm.ToolPermissionHookRan},
		{&schema.ToolHookRan{Event: schema.HookPostToolUseFailure}, fsm.ToolFailureHookRan},
		{&schema.ToolDecided{Decision: "deny"}, fsm.ToolDecidedDeny},
		{&schema.ToolResultRecorded{Hooks: []string{"h"}}, fsm.ToolResultWithHooks},
		{&schema.ToolResultRecorded{}, fsm.ToolResult},
	}
	for _, tt := range tests {
		if got, ok := fsm.ToolEventOf(tt.p); !ok || got != tt.want {
			t.Errorf("ToolEventOf(%T %+v) = %s, %v; want %s", tt.p, tt.p, got, ok, tt.want)
		}
	}
	if _, ok := fsm.ToolEventOf(&schema.SessionLoaded{}); ok {
		t.Error("a lifecycle step was labelled a tool step")
	}
}
