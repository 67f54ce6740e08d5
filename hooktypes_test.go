package reprise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/schema"
)

// TestOtherHookTypesGateToolCalls checks, through the Engine on a bbolt
// file, an http and a prompt hook from a settings file on PreToolUse: the
// http gate's deny denies the call, the prompt hook's verdict is asked of
// the host's evaluator, each is recorded once with its type and answer,
// and after DeleteSession and Vacuum no answer or prompt is left in the
// file.
func TestOtherHookTypesGateToolCalls(t *testing.T) {
	ctx := context.Background()
	const secret = "the-secret-path-7781"
	posts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		posts++
		if bytes.Contains(body, []byte("rm -rf")) {
			_, _ = io.WriteString(w, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no rm: `+secret+`"}}`)
			return
		}
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	var asked []hookexec.Question
	eval := func(ctx context.Context, q hookexec.Question) (string, error) {
		asked = append(asked, q)
		return `{"ok": true, "reason": "looks fine"}`, nil
	}
	settings := writeSettings(t, "settings.json", `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
		{"type": "http", "url": "`+srv.URL+`/gate"},
		{"type": "prompt", "prompt": "Is this call safe? $ARGUMENTS"}]}]}}`)
	path := filepath.Join(t.TempDir(), "reprise.db")
	e := testkit.OpenEngine(t, path, reprise.Options{Logger: testkit.Discard, Runner: hookexec.Exec{Evaluator: eval}})
	hooks, errs := hookexec.LoadAll([]string{settings}, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := e.Hooks().AddAll(hooks); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "a", t.TempDir(), "clean up")
	agent := testkit.Agent(t, e, "ide")
	if _, err := agent.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	d, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"rm -rf ` + secret + `"}`), Permission: hookexec.Allow, AddToolUse: true})
	if err != nil || d.Decision != hookexec.Deny || !strings.Contains(d.Reason, "no rm") {
		t.Fatalf("rm: %+v, %v; want the http hook's deny", d, err)
	}
	if posts != 1 || len(asked) != 1 || !strings.Contains(asked[0].Prompt, secret) {
		t.Fatalf("%d posts and %d questions (%+v); want one of each, the call's input in the prompt", posts, len(asked), asked)
	}
	var ran []schema.HookOutcome
	for _, ev := range testkit.Events(t, e.Store()) {
		if ev.Type != schema.TypeToolHookRan {
			continue
		}
		p, err := schema.Decode(ev)
		if err != nil {
			t.Fatal(err)
		}
		ran = append(ran, p.(*schema.ToolHookRan).Outcomes...)
	}
	if len(ran) != 2 || ran[0].Type != "http" || !strings.Contains(ran[0].Answer, secret) || ran[1].Type != "prompt" || ran[1].Answer == "" || !strings.Contains(ran[1].Request, secret) {
		t.Fatalf("recorded outcomes %+v; want the http and the prompt hook, each once, with what they answered", ran)
	}

	if err := e.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Store().ReadAll(ctx, 1, func(ev eventlog.Event) error {
		if bytes.Contains(ev.Payload, []byte(secret)) || bytes.Contains(ev.Payload, []byte("looks fine")) {
			t.Errorf("event %s#%d keeps a hook's request or answer after the vacuum", ev.Stream, ev.Seq)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(mustRead(t, path), []byte("looks fine")) {
		t.Error("the store's file keeps the prompt hook's answer after the vacuum")
	}
}
