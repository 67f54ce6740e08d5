package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// The http hook's floor POSTs the very body the hook sent, to the same
// server; a hook whose answer is not JSON fails the run rather than
// being timed as a fast failure.
func TestHTTPHookFloorPostsTheHooksBody(t *testing.T) {
	ctx := context.Background()
	run, err := openHTTPHook(ctx, NewEnv(t.TempDir(), t.TempDir(), true))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	r := run.(*httpHookRunner)
	for range 2 { // the hook first, then the floor first
		samples, err := r.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(samples) != 1 || samples[0].Floor.Time <= 0 || samples[0].Reprise.Time <= 0 {
			t.Fatalf("samples %+v, want one with both sides timed", samples)
		}
		if last := r.server.last(); !bytes.Equal(last, r.body) {
			t.Fatalf("the server was last sent %s, want the hook's body %s", last, r.body)
		}
	}
	var sent struct {
		Event string `json:"hook_event_name"`
		Tool  string `json:"tool_name"`
		ID    string `json:"tool_use_id"`
	}
	if err := json.Unmarshal(r.body, &sent); err != nil || sent.Event != "PreToolUse" || sent.Tool != "Bash" || sent.ID != "toolu_000001" {
		t.Fatalf("the hook POSTed %s (%v), want the call's PreToolUse input", r.body, err)
	}
	if note := r.Note("http-hook"); !strings.Contains(note, "127.0.0.1") {
		t.Errorf("note = %q", note)
	}

	r.server.mu.Lock()
	r.server.answer = []byte("not JSON")
	r.server.mu.Unlock()
	if err := preToolUse(ctx, r.exec, r.hook, r.in); err == nil || !strings.Contains(err.Error(), "failed") {
		t.Errorf("a hook answered with plain text: %v, want its failure", err)
	}
	if _, err := r.Run(ctx); err == nil {
		t.Errorf("a run whose hook fails succeeded")
	}
}

// The prompt hook's floor asks the evaluator the very question the hook
// asked; a model that says no fails the run, and so does one that is
// gone.
func TestPromptHookFloorAsksTheHooksQuestion(t *testing.T) {
	ctx := context.Background()
	run, err := openPromptHook(ctx, NewEnv(t.TempDir(), t.TempDir(), true))
	if err != nil {
		t.Fatal(err)
	}
	r := run.(*promptHookRunner)
	for range 2 {
		samples, err := r.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(samples) != 1 || samples[0].Floor.Time <= 0 || samples[0].Reprise.Time <= 0 {
			t.Fatalf("samples %+v, want one with both sides timed", samples)
		}
		var sent modelRequest
		if err := json.Unmarshal(r.model.server.last(), &sent); err != nil || sent.Prompt != r.q.Prompt || sent.System != r.q.System {
			t.Fatalf("the model was last asked %s (%v), want the hook's question %+v", r.model.server.last(), err, *r.q)
		}
	}
	if !strings.HasPrefix(r.q.Prompt, "May this command run on a build machine? {") || !strings.Contains(r.q.Prompt, `"tool_name":"Bash"`) {
		t.Errorf("the hook asked %q, want its prompt with the call's input in it", r.q.Prompt)
	}

	r.model.server.mu.Lock()
	r.model.server.answer = []byte(`{"content":[{"type":"text","text":"{\"ok\": false, \"reason\": \"not on a build machine\"}"}]}`)
	r.model.server.mu.Unlock()
	if err := preToolUse(ctx, r.exec, r.hook, r.in); err == nil || !strings.Contains(err.Error(), "deny") {
		t.Errorf("a model that says no: %v, want the call denied", err)
	}
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.model.evaluate(ctx, *r.q); err == nil {
		t.Errorf("the evaluator reached its model after Close")
	}
}
