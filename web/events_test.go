package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/web"
)

// eventsPage is the API's answer for the events page, as the tests read
// it.
type eventsPage struct {
	Events []json.RawMessage `json:"events"`
	Next   string            `json:"next_cursor"`
	Cut    []struct {
		Stream       string `json:"stream"`
		Seq          uint64 `json:"seq"`
		Position     uint64 `json:"position"`
		Bytes, Shown int
		Whole        string `json:"whole"`
	} `json:"cut"`
}

func TestLongEventIsShownCutWithALinkToTheWhole(t *testing.T) {
	text := longText(300 << 10)
	s := serveSession(t, web.Options{}, "long", textMessage("m-0", "user", "Print the log."),
		textMessage("m-1", "assistant", text), textMessage("m-2", "user", "Thanks."))

	var page eventsPage
	s.api(t, "/events", &page)
	if len(page.Events) != 4 || page.Next != "" {
		t.Fatalf("page holds %d events, next %q; want all 4 on one page", len(page.Events), page.Next)
	}
	if len(page.Events[2]) > 70<<10 {
		t.Errorf("the long message's event takes %d bytes of the page, want at most about 64 KiB", len(page.Events[2]))
	}
	if len(page.Cut) != 1 || page.Cut[0].Stream != "session/long" || page.Cut[0].Seq != 3 || page.Cut[0].Bytes != len(text) ||
		page.Cut[0].Shown > 64<<10 || page.Cut[0].Whole != "/api/sessions/long/messages/3" {
		t.Fatalf("cut = %+v, want session/long#3, %d bytes, at most 64 KiB shown, whole at /api/sessions/long/messages/3", page.Cut, len(text))
	}
	var ev jsonview.Event
	if err := json.Unmarshal(page.Events[2], &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Position != page.Cut[0].Position || ev.Type != schema.TypeMessageAppended {
		t.Errorf("the cut event is %s at %d, want the message at %d", ev.Type, ev.Position, page.Cut[0].Position)
	}

	body := s.page(t, "/events")
	contains(t, "events page", body, `<a href="/sessions/long/messages/3">`, "Print the log.", "Thanks.")
	if len(body) > 400<<10 {
		t.Errorf("the page is %d bytes, want it near the 64 KiB shown of the message", len(body))
	}

	// Any event is served whole at its position, as log --json prints it.
	pos := strconv.FormatUint(ev.Position, 10)
	status, ctype, whole := s.get(t, "/api/events/"+pos, "")
	var got struct {
		jsonview.Event
		Payload struct {
			Message jsonview.Message `json:"msg"`
		} `json:"payload"`
	}
	if status != http.StatusOK || ctype != "application/json" || json.Unmarshal([]byte(whole), &got) != nil ||
		got.Position != ev.Position || len(got.Payload.Message.Content) != 1 ||
		got.Payload.Message.Content[0].(map[string]any)["text"] != text {
		t.Errorf("GET /api/events/%s = %d %s:\n%s\nwant the whole message's event", pos, status, ctype, clipped([]byte(whole)))
	}
	var first eventsPage
	s.api(t, "/events?limit=1", &first)
	if _, _, whole := s.get(t, "/events/1", ""); whole != string(first.Events[0])+"\n" {
		t.Errorf("GET /events/1 =\n%s\nwant what the events page shows of it:\n%s", whole, first.Events[0])
	}
	for _, path := range []string{"/events/0", "/events/99", "/events/x", "/api/events/18446744073709551615"} {
		if status, _, _ := s.get(t, path, ""); status != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, status)
		}
	}
}

func TestEventsPagesAreBoundedByBytes(t *testing.T) {
	var msgs []schema.Message
	for i := range 60 {
		msgs = append(msgs, textMessage(fmt.Sprintf("m-%d", i), "assistant", longText(50<<10)))
	}
	s := serveSession(t, web.Options{}, "wide", msgs...)
	seen, cursor, pages := 0, "", 0
	for ; pages < 10; pages++ {
		path := "/events"
		if cursor != "" {
			path += "?cursor=" + cursor
		}
		var page eventsPage
		s.api(t, path, &page)
		size := 0
		for _, raw := range page.Events {
			size += len(raw)
		}
		if size > 1<<20+64<<10 {
			t.Errorf("page %s holds %d events, %d bytes; want about 1 MiB at most", path, len(page.Events), size)
		}
		if len(page.Cut) != 0 {
			t.Errorf("page %s cut %+v; want events under 64 KiB whole", path, page.Cut)
		}
		seen += len(page.Events)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if pages < 2 || seen != len(msgs)+1 {
		t.Fatalf("%d pages list %d events; want the 61 events on several pages", pages+1, seen)
	}
}

func TestLongToolUseResultIsShownCutWithALinkToTheWhole(t *testing.T) {
	// The transcript keeps a tool's result twice: in the tool_result block
	// and as toolUseResult, which the message's event carries beside its
	// content.
	output := longText(2 << 20)
	result, err := json.Marshal(map[string]string{"stdout": output})
	if err != nil {
		t.Fatal(err)
	}
	msg := schema.Message{UUID: "m-1", Role: "user", Content: []schema.Block{{Type: "tool_result",
		Raw: []byte(`{"type":"tool_result","tool_use_id":"toolu_1","content":"done"}`)}}, ToolUseResult: result}
	s := serveSession(t, web.Options{}, "tool", textMessage("m-0", "user", "Run it."), msg)

	var page eventsPage
	status, _, body := s.get(t, "/api/events", "")
	if status != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil {
		t.Fatalf("GET /api/events = %d:\n%s", status, clipped([]byte(body)))
	}
	if len(body) > 100<<10 {
		t.Errorf("the events page's JSON is %d bytes, want about the 64 KiB a long event shows", len(body))
	}
	if len(page.Events) != 3 || len(page.Cut) != 1 {
		t.Fatalf("page holds %d events, cut %+v; want 3 events, the tool_result's cut", len(page.Events), page.Cut)
	}
	c := page.Cut[0]
	pos := strconv.FormatUint(c.Position, 10)
	if c.Seq != 3 || c.Bytes < len(result) || c.Shown > 64<<10 || c.Whole != "/api/events/"+pos {
		t.Errorf("cut = %+v, want seq 3, at least the %d bytes of its toolUseResult, at most 64 KiB shown, whole at /api/events/%s",
			c, len(result), pos)
	}
	html := s.page(t, "/events")
	if len(html) > 400<<10 {
		t.Errorf("the events page is %d bytes, want it near the 64 KiB shown of the result", len(html))
	}
	contains(t, "events page", html, `<a href="/events/`+pos+`">`, "toolu_1")

	// The whole event, toolUseResult and all, is at its position.
	var whole struct {
		Payload struct {
			Message struct {
				ToolUse map[string]string `json:"tooluse"`
			} `json:"msg"`
		} `json:"payload"`
	}
	status, _, body = s.get(t, c.Whole, "")
	if status != http.StatusOK || json.Unmarshal([]byte(body), &whole) != nil || whole.Payload.Message.ToolUse["stdout"] != output {
		t.Errorf("GET %s = %d:\n%s\nwant the whole toolUseResult", c.Whole, status, clipped([]byte(body)))
	}
}

// The events page keeps the events of a time range.
func TestEventsPageFiltersByTime(t *testing.T) {
	s := serve(t)
	var page struct {
		Events []struct{ Time string } `json:"events"`
	}
	s.api(t, "/events?since=2000-01-01&until=2000-01-01", &page)
	if len(page.Events) != 0 {
		t.Errorf("events of 2000-01-01: %d, want none", len(page.Events))
	}
	s.api(t, "/events?since=2000-01-01&limit=5", &page)
	if len(page.Events) != 5 {
		t.Errorf("events since 2000: %d, want a page of 5", len(page.Events))
	}
	if status, _, _ := s.get(t, "/api/events?until=tomorrow", ""); status != http.StatusBadRequest {
		t.Errorf("/api/events?until=tomorrow = %d, want 400", status)
	}
	body := s.page(t, "/events?since=2000-01-01&limit=1")
	contains(t, "a filtered events page", body, `value="2000-01-01"`, `since=2000-01-01`)
}
