package web_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/web"
)

// The title a SessionStart command hook gave shows on the sessions list
// and on the session's page, escaped as any text, and in the API's JSON
// of both.
func TestPagesShowTheTitleHooksGave(t *testing.T) {
	dir := t.TempDir()
	e, err := reprise.Open(filepath.Join(dir, "store.db"), reprise.Options{TranscriptDir: filepath.Join(dir, "files"), Logger: testkit.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	answer := `{"hookSpecificOutput":{"hookEventName":"SessionStart","sessionTitle":"<script>alert(1)</script>\u001b[2J & \"more\"\nnext"}}`
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.SessionStart, Name: "title", Source: "test",
		Body: hookexec.Command{Line: "printf '%s\\n' '" + answer + "'"}}); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "w", "", "the first prompt")
	if _, err := testkit.Agent(t, e, "ide").Start(context.Background(), "w"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(e, web.Options{}))
	t.Cleanup(srv.Close)
	s := &served{srv: srv}

	const title = `<script>alert(1)</script> [2J & "more" next`
	const escaped = `&lt;script&gt;alert(1)&lt;/script&gt; [2J &amp; &#34;more&#34; next`
	for _, path := range []string{"/sessions", "/sessions/w"} {
		body := s.page(t, path)
		contains(t, path, body, `<p class="title">`+escaped+`</p>`)
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "\x1b") || strings.Contains(body, "the first prompt</p>") {
			t.Errorf("%s shows the title unescaped, with its control characters, or not at all:\n%s", path, body)
		}
	}
	var list struct {
		Sessions []struct{ ID, Title string }
	}
	s.api(t, "/sessions", &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Title != title {
		t.Errorf("/api/sessions = %+v, want the title %q", list, title)
	}
	var conv struct{ Title string }
	s.api(t, "/sessions/w", &conv)
	if conv.Title != title {
		t.Errorf("/api/sessions/w title = %q, want %q", conv.Title, title)
	}
}
