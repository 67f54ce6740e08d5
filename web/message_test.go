package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/web"
)

// serveSession serves a store holding only session id, of msgs, with
// opts.
func serveSession(t *testing.T, opts web.Options, id string, msgs ...schema.Message) *served {
	t.Helper()
	dir := t.TempDir()
	path := writeSession(t, dir, id, msgs...)
	e := testkit.OpenEngine(t, path, reprise.Options{AllowMissingCwd: true, TranscriptDir: filepath.Join(dir, "files"), Logger: testkit.Discard})
	opts.Logger = testkit.Discard
	srv := httptest.NewServer(web.New(e, opts))
	t.Cleanup(srv.Close)
	return &served{srv: srv}
}

// sessionPage is the API's answer for a session page, as the tests read
// it.
type sessionPage struct {
	Messages []json.RawMessage `json:"messages"`
	Next     string            `json:"next_cursor"`
	Cut      []struct {
		Seq          uint64 `json:"seq"`
		Message      string `json:"message"`
		Bytes, Shown int
		Whole        string `json:"whole"`
	} `json:"cut"`
}

func TestLongMessageIsShownCutWithALinkToTheWhole(t *testing.T) {
	text := longText(300 << 10)
	output, err := json.Marshal(longText(100 << 10))
	if err != nil {
		t.Fatal(err)
	}
	tool := fmt.Sprintf("{\n  \"type\": \"tool_result\",\n  \"tool_use_id\": \"t1\",\n  \"content\": %s\n}", output)
	long := schema.Message{UUID: "m-1", Role: "assistant", Timestamp: time.Now().UnixNano(), Content: []schema.Block{
		{Type: "text", Text: "Here is the log:"}, {Type: "text", Text: text}, {Type: "tool_result", Raw: []byte(tool)}}}
	s := serveSession(t, web.Options{}, "long", textMessage("m-0", "user", "Print the log."), long, textMessage("m-2", "user", "Thanks."))

	var page sessionPage
	s.api(t, "/sessions/long", &page)
	if len(page.Messages) != 3 || page.Next != "" {
		t.Fatalf("page holds %d messages, next %q; want all 3 on one page", len(page.Messages), page.Next)
	}
	if len(page.Messages[1]) > 70<<10 {
		t.Errorf("the long message takes %d bytes of the page, want at most about 64 KiB", len(page.Messages[1]))
	}
	var shown jsonview.Message
	if err := json.Unmarshal(page.Messages[1], &shown); err != nil {
		t.Fatal(err)
	}
	if len(shown.Content) != 2 || !strings.Contains(string(page.Messages[1]), `"cut":true`) {
		t.Errorf("the long message shows %s, want its first block whole and the start of the second, marked cut", clipped(page.Messages[1]))
	}
	total := len("Here is the log:") + len(text) + len(tool)
	if len(page.Cut) != 1 || page.Cut[0].Seq != 3 || page.Cut[0].Message != "m-1" || page.Cut[0].Bytes != total ||
		page.Cut[0].Shown > 64<<10 || page.Cut[0].Whole != "/api/sessions/long/messages/3" {
		t.Fatalf("cut = %+v, want message m-1 at seq 3, %d bytes, at most 64 KiB shown, whole at /api/sessions/long/messages/3", page.Cut, total)
	}

	body := s.page(t, "/sessions/long")
	contains(t, "session page", body, `<a href="/sessions/long/messages/3">`, "Print the log.", "Thanks.")
	if len(body) > 400<<10 {
		t.Errorf("the page is %d bytes, want it near the 64 KiB shown of the message", len(body))
	}

	status, ctype, whole := s.get(t, "/sessions/long/messages/3", "")
	if want := "Here is the log:\n\n" + text + "\n\n" + tool + "\n"; status != http.StatusOK || ctype != "text/plain; charset=utf-8" || whole != want {
		t.Errorf("GET /sessions/long/messages/3 = %d %s, %d bytes; want 200, the whole message as text, %d bytes", status, ctype, len(whole), len(want))
	}
	status, ctype, whole = s.get(t, page.Cut[0].Whole, "")
	if want := encode(t, jsonview.NewMessage(long)) + "\n"; status != http.StatusOK || ctype != "application/json" || whole != want {
		t.Errorf("GET %s = %d %s:\n%s\nwant what replay --json prints for it:\n%s", page.Cut[0].Whole, status, ctype, clipped([]byte(whole)), clipped([]byte(want)))
	}
	for _, path := range []string{"/sessions/long/messages/1", "/sessions/long/messages/9", "/sessions/long/messages/x", "/api/sessions/none/messages/2"} {
		if status, _, _ := s.get(t, path, ""); status != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, status)
		}
	}
}

// clipped is the start and the end of a long answer, for a message.
func clipped(b []byte) string {
	if len(b) <= 400 {
		return string(b)
	}
	return fmt.Sprintf("%s … (%d bytes) … %s", b[:200], len(b), b[len(b)-200:])
}

func TestSessionPagesAreBoundedByBytes(t *testing.T) {
	var msgs []schema.Message
	for i := range 60 {
		msgs = append(msgs, textMessage(fmt.Sprintf("m-%d", i), "assistant", longText(50<<10)))
	}
	s := serveSession(t, web.Options{}, "wide", msgs...)
	var seen []string
	cursor, pages := "", 0
	for ; pages < 10; pages++ {
		path := "/sessions/wide"
		if cursor != "" {
			path += "?cursor=" + cursor
		}
		var page sessionPage
		s.api(t, path, &page)
		size := 0
		for _, raw := range page.Messages {
			var m jsonview.Message
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			seen = append(seen, m.UUID)
			for _, b := range m.Content {
				size += len(b.(map[string]any)["text"].(string))
			}
		}
		if size > 1<<20 {
			t.Errorf("page %s holds %d messages, %d bytes; want at most 1 MiB of content", path, len(page.Messages), size)
		}
		if len(page.Cut) != 0 {
			t.Errorf("page %s cut %+v; want messages under 64 KiB whole", path, page.Cut)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if pages < 2 || len(seen) != len(msgs) {
		t.Fatalf("%d pages list %d messages; want the 60 messages of 50 KiB on several pages", pages+1, len(seen))
	}
	for i, uuid := range seen {
		if uuid != msgs[i].UUID {
			t.Fatalf("message %d of the pages is %s, want %s", i, uuid, msgs[i].UUID)
		}
	}
}

func TestRequestsOverTheBudgetWaitThenAnswer503(t *testing.T) {
	const size = 32 << 20
	s := serveSession(t, web.Options{Budget: web.NewBudget(size), BudgetWait: 100 * time.Millisecond},
		"long", textMessage("m-0", "user", "Print the log."), textMessage("m-1", "assistant", longText(size)))
	// A client that reads nothing keeps the whole message in flight.
	res, err := http.Get(s.srv.URL + "/sessions/long/messages/3")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	for _, path := range []string{"/sessions/long", "/api/sessions/long", "/sessions/long/messages/3"} {
		req, err := http.NewRequest("GET", s.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		busy, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, busy.Body)
		busy.Body.Close()
		if busy.StatusCode != http.StatusServiceUnavailable || busy.Header.Get("Retry-After") == "" {
			t.Errorf("GET %s while the budget is spent = %d, Retry-After %q; want 503 with Retry-After", path, busy.StatusCode, busy.Header.Get("Retry-After"))
		}
	}
	if n, err := io.Copy(io.Discard, res.Body); err != nil || n < size {
		t.Fatalf("the whole message: %d bytes, %v", n, err)
	}
	res.Body.Close()
	var page sessionPage
	s.api(t, "/sessions/long", &page) // the budget is back
	if len(page.Messages) != 2 {
		t.Errorf("page holds %d messages once the budget is back, want 2", len(page.Messages))
	}
}

func TestToolBlocksSayWhatTheCallIs(t *testing.T) {
	use := schema.Message{UUID: "m-1", Role: "assistant", Content: []schema.Block{{Type: "tool_use",
		Raw: []byte(`{"type":"tool_use","id":"toolu_b","name":"Bash","input":{"command":"echo done >> log.txt && cat < in.txt\nwc -l log.txt"}}`)},
		{Type: "tool_use", Raw: []byte(`{"type":"tool_use","id":"toolu_r","name":"Read","input":{"file_path":"a<b>.go"}}`)}}}
	results := schema.Message{UUID: "m-2", Role: "user", Content: []schema.Block{
		{Type: "tool_result", Raw: []byte(`{"type":"tool_result","tool_use_id":"toolu_b","is_error":true,"content":"Permission to use Bash was denied."}`)},
		{Type: "tool_result", Raw: []byte(`{"type":"tool_result","tool_use_id":"toolu_r","content":"package a"}`)}}}
	s := serveSession(t, web.Options{}, "tools", textMessage("m-0", "user", "Log it."), use, results)

	body := s.page(t, "/sessions/tools")
	contains(t, "session page", body,
		// A folded call names its id and sums its input up on one line.
		// Its result folds into it, and a result the model is told is an
		// error says so, on the call too.
		`<summary>tool_use Bash toolu_b <code>echo done &gt;&gt; log.txt &amp;&amp; cat &lt; in.txt⏎wc -l log.txt</code> <span class="badge error">error</span></summary>`,
		`<summary>tool_use Read toolu_r <code>{&#34;file_path&#34;:&#34;a&lt;b&gt;.go&#34;}</code></summary>`,
		`<p>tool_result for toolu_b <span class="badge error">error</span></p>`,
		`<p>tool_result for toolu_r</p><pre>{`+"\n"+`  &#34;content&#34;: &#34;package a&#34;`,
		// Where the result was, a line says where it is shown.
		`The result for <a href="#b-m-1-0">toolu_b</a>, shown with its call <span class="badge error">error</span>.`,
		`The result for <a href="#b-m-1-1">toolu_r</a>, shown with its call.`,
		// The JSON shown escapes only as HTML does.
		`&#34;command&#34;: &#34;echo done &gt;&gt; log.txt &amp;&amp; cat &lt; in.txt\nwc -l log.txt&#34;`)
	for _, path := range []string{"/sessions/tools", "/events"} {
		if body := s.page(t, path); strings.Contains(body, `\u003e`) || strings.Contains(body, `\u0026`) || strings.Contains(body, `\u003c`) {
			t.Errorf("%s shows the input's > < & as JSON's HTML escapes", path)
		}
	}
}
