package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/web"
)

// An answer's Markdown is rendered on the session page, its code
// highlighted with the view's code.css, and its hostile link disarmed; a
// user's text stays as it was typed.
func TestSessionPageRendersAnswersAsMarkdown(t *testing.T) {
	s := serve(t)
	ctx := context.Background()
	if _, err := s.Engine.Append(ctx, s.Work, reprise.Text("assistant",
		"**Done.** See [the log](javascript:alert(1)) and\n\n```go\nfunc main() {}\n```\n")); err != nil {
		t.Fatal(err)
	}
	s.Append(t, s.Work, "my **own** words")
	body := s.page(t, "/sessions/"+s.Work)
	contains(t, "the session page", body, "<strong>Done.</strong>", `<span class="kd">func</span>`, "my **own** words", "/static/code.css")
	if strings.Contains(body, "javascript:") {
		t.Error("the session page holds the answer's javascript: link")
	}
	status, ctype, css := s.get(t, "/static/code.css", "")
	if status != http.StatusOK || !strings.HasPrefix(ctype, "text/css") || !strings.Contains(css, ".chroma") {
		t.Errorf("/static/code.css = %d %s %.80q", status, ctype, css)
	}
}

// Each tool call of a conversation folds its result and says how its
// hooks decided it, linked to the call's row on its agent's timeline.
func TestSessionPageFoldsEachCallWithItsResultAndDecision(t *testing.T) {
	s := serve(t)
	body := s.page(t, "/sessions/"+s.ToolsWork)
	denied := s.ToolCalls[0]
	contains(t, "the tool session's page", body,
		`<span class="badge deny">deny</span>`,
		`Decided <strong>deny</strong>`,
		`href="/agents/`+s.Tools+`#run-`+denied+`"`,
		`PreToolUse guard-rm (ok)`,
		`Decided <strong>allow</strong>`,
		`, shown with its call`)
	if !strings.Contains(body, `class="block call"`) {
		t.Error("no call on the page holds its result")
	}
}

// A fork's page marks the messages it copied from its parent, up to the
// fork point, and the parent's page marks where it was forked: oldest
// first the copies come above the fork point, newest first below it.
func TestForkIsShownAgainstItsParent(t *testing.T) {
	s := serve(t)
	fork, parent := s.Demo.Fork.To, s.Demo.Design
	s.Append(t, fork, "a question of the fork's own")
	body := s.page(t, "/sessions/"+fork+"?order=oldest")
	point := strings.Index(body, `<li class="forkpoint">`)
	own := strings.Index(body, "a question of the fork&#39;s own")
	if point < 0 || own < point || !strings.Contains(body[:point], ` shared`) || strings.Contains(body[point:], ` shared`) {
		t.Fatalf("the fork's page does not mark its copies above the fork point and its own message below:\n%s", body)
	}
	contains(t, "the fork point", body[point:], `href="/sessions/`+parent+`#m-`, "The messages above")
	body = s.page(t, "/sessions/"+fork)
	point = strings.Index(body, `<li class="forkpoint">`)
	own = strings.Index(body, "a question of the fork&#39;s own")
	if point < 0 || own < 0 || own > point || strings.Contains(body[:point], ` shared`) || !strings.Contains(body[point:], ` shared`) {
		t.Fatalf("newest first, the fork's page does not show its own message above the fork point and its copies below:\n%s", body)
	}
	contains(t, "the fork point, newest first", body[point:], "The messages below")
	contains(t, "the parent's page", s.page(t, "/sessions/"+parent), `Forked here: <a href="/sessions/`+fork+`">`)
	if strings.Contains(s.page(t, "/sessions/"+parent), ` shared`) {
		t.Error("the parent's page marks messages as copied")
	}
}

// A subagent's turn shows under the call that started it, and its own
// subagent's under its call in turn.
func TestSubagentTurnNestsUnderItsCall(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	allow := `echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'`
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.PreToolUse, Body: hookexec.Command{Line: allow}}); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "s", dir, "review the code")
	parent := testkit.Agent(t, e, "ide")
	if _, err := parent.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	callTool(t, parent, "toolu_agent1", "Agent", `{"description": "look", "prompt": "list the files", "subagent_type": "Explore"}`, "")
	child, err := parent.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: "toolu_agent1", Type: "Explore", Description: "look", Prompt: "list the files"})
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, child, "toolu_nested", "Task", `{"description": "deeper", "prompt": "read one"}`, "")
	grandchild, err := child.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: "toolu_nested", Description: "deeper", Prompt: "read one"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, grandchild.Current(), reprise.Text("assistant", "**a.go** holds it")); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(e, web.Options{}))
	t.Cleanup(srv.Close)
	body := (&served{srv: srv}).page(t, "/sessions/s")
	outer := strings.Index(body, `Subagent <a href="/sessions/`+child.Current()+`">`)
	inner := strings.Index(body, `Subagent <a href="/sessions/`+grandchild.Current()+`">`)
	answer := strings.Index(body, "<strong>a.go</strong> holds it")
	if outer < 0 || inner < outer || answer < inner {
		t.Fatalf("the parent's page does not nest the subagent (%d), its own (%d) and its answer (%d) in order:\n%s", outer, inner, answer, body)
	}
	contains(t, "the parent's page", body, `(Explore): look`, `<span class="badge">subagent</span>`, "list the files")
}
