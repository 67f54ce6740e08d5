package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/web"
)

// agentRun is one run of an agent: its restore id and its steps.
type agentRun struct {
	id    string
	steps []schema.Payload
}

// writeAgent appends, straight to the bbolt file at path, agent id's
// stream of runs.
func writeAgent(tb testing.TB, path, id string, runs ...agentRun) {
	tb.Helper()
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	stream := projection.AgentStream(id)
	stamp := time.Now().Add(-time.Hour).UnixNano()
	var recs []eventlog.Record
	for _, r := range runs {
		for _, p := range r.steps {
			stamp += 1000
			rec, err := schema.NewRecord(stream, p, stamp, r.id)
			if err != nil {
				tb.Fatal(err)
			}
			recs = append(recs, rec)
		}
	}
	if _, err := s.Append(context.Background(), []eventlog.Expect{{Stream: stream}}, recs); err != nil {
		tb.Fatal(err)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
}

// startup is a startup restore of session that injected context as
// message uuid.
func startup(id, session, context, uuid string) agentRun {
	return agentRun{id: id, steps: []schema.Payload{
		&schema.SessionLoaded{Session: session, Source: schema.SourceStartup},
		&schema.SessionStartHookStarted{Session: session, Source: schema.SourceStartup, Hooks: []string{"context.sh"}},
		&schema.SessionStartHookRan{Session: session, Source: schema.SourceStartup, Context: context,
			Outcomes: []schema.HookOutcome{{Name: "context.sh", Status: schema.HookOK, ContextLen: len(context)}}},
		&schema.ContextInjected{Session: session, MessageUUID: uuid},
	}}
}

// prompt is a prompt's run in session, kept as message uuid.
func prompt(id, session, text, uuid string) agentRun {
	return agentRun{id: id, steps: []schema.Payload{
		&schema.PromptHookStarted{Session: session, Prompt: text, PromptID: id, Hooks: []string{"prompt.sh"}},
		&schema.PromptHookRan{Session: session, MessageUUID: uuid,
			Outcomes: []schema.HookOutcome{{Name: "prompt.sh", Status: schema.HookOK}}},
	}}
}

// serveAgent serves a store holding session s1, of msgs, and agent a1's
// runs.
func serveAgent(t *testing.T, opts web.Options, msgs []schema.Message, runs ...agentRun) *served {
	t.Helper()
	dir := t.TempDir()
	path := writeSession(t, dir, "s1", msgs...)
	writeAgent(t, path, "a1", runs...)
	e := testkit.OpenEngine(t, path, reprise.Options{AllowMissingCwd: true, TranscriptDir: filepath.Join(dir, "files"), Logger: testkit.Discard})
	opts.Logger = testkit.Discard
	srv := httptest.NewServer(web.New(e, opts))
	t.Cleanup(srv.Close)
	return &served{srv: srv}
}

// agentPage is the API's answer for an agent page, as the tests read it.
type agentPage struct {
	Restores []jsonview.Restore `json:"restores"`
	Runs     []json.RawMessage  `json:"runs"`
	Prev     string             `json:"prev_cursor"`
	Next     string             `json:"next_cursor"`
	Cut      []struct {
		Stream        string `json:"stream"`
		Seq, Position uint64
		Bytes, Shown  int
		Whole         string `json:"whole"`
	} `json:"cut"`
}

func TestLongHookTextsAreShownCutWithALinkToTheWhole(t *testing.T) {
	context, text := longText(300<<10), longText(200<<10)
	injected := schema.Message{UUID: "ctx", Role: "user", IsMeta: true, Content: []schema.Block{{Type: "text", Text: context}}}
	// A budget that holds one of the long texts at a time: the session
	// page reads the agents once it holds no long message.
	s := serveAgent(t, web.Options{Budget: web.NewBudget(400 << 10), BudgetWait: time.Second},
		[]schema.Message{injected, textMessage("m-p", "user", text)},
		startup("r1", "s1", context, "ctx"), prompt("p1", "s1", text, "m-p"))

	status, _, answer := s.get(t, "/api/agents/a1", "")
	var page agentPage
	if status != http.StatusOK || json.Unmarshal([]byte(answer), &page) != nil {
		t.Fatalf("GET /api/agents/a1 = %d %s", status, clipped([]byte(answer)))
	}
	if len(answer) > 200<<10 {
		t.Errorf("the agent's answer is %d bytes, want it near the 64 KiB shown of each long text", len(answer))
	}
	if len(page.Restores) != 1 || len(page.Restores[0].Context) > 64<<10 || !strings.HasPrefix(context, page.Restores[0].Context) {
		t.Errorf("restores = %d, the first's context %d bytes; want one, its context's start, at most 64 KiB", len(page.Restores), len(page.Restores[0].Context))
	}
	if len(page.Cut) != 2 || page.Cut[0].Stream != "agent/a1" || page.Cut[0].Seq != 3 || page.Cut[1].Seq != 5 ||
		page.Cut[0].Bytes < len(context) || page.Cut[1].Bytes < len(text) || page.Cut[0].Shown > 65<<10 || page.Cut[1].Shown > 65<<10 || // ids and names stay whole besides
		page.Cut[0].Whole != "/api/events/"+strconv.FormatUint(page.Cut[0].Position, 10) {
		t.Fatalf("cut = %+v; want agent/a1#3 (the context) and #5 (the prompt), about 64 KiB shown, whole at /api/events/POSITION", page.Cut)
	}

	body := s.page(t, "/agents/a1")
	contains(t, "agent page", body, fmt.Sprintf(`<a href="/events/%d">`, page.Cut[0].Position), fmt.Sprintf(`<a href="/events/%d">`, page.Cut[1].Position))
	if len(body) > 400<<10 {
		t.Errorf("the page is %d bytes, want it near the 64 KiB shown of each long text", len(body))
	}

	var whole struct {
		Payload struct {
			Context string `json:"context"`
		} `json:"payload"`
	}
	status, _, got := s.get(t, page.Cut[0].Whole, "")
	if status != http.StatusOK || json.Unmarshal([]byte(got), &whole) != nil || whole.Payload.Context != context {
		t.Errorf("GET %s = %d %s; want the event with the whole context", page.Cut[0].Whole, status, clipped([]byte(got)))
	}

	var session struct {
		Injected []struct {
			Message, Agent string
		} `json:"injected"`
	}
	s.api(t, "/sessions/s1", &session)
	if len(session.Injected) != 1 || session.Injected[0].Message != "ctx" || session.Injected[0].Agent != "a1" {
		t.Errorf("the session page says %+v was injected; want message ctx, by agent a1", session.Injected)
	}
}

func TestAgentPagesAreBoundedByBytes(t *testing.T) {
	runs := []agentRun{startup("r1", "s1", "", "")}
	for i := range 40 {
		runs = append(runs, prompt(fmt.Sprintf("p%d", i), "s1", longText(50<<10), fmt.Sprintf("m-%d", i)))
	}
	s := serveAgent(t, web.Options{}, nil, runs...)
	seen, cursor, pages := 0, "0", 0
	for ; pages < 10; pages++ {
		path := "/agents/a1?cursor=" + cursor
		body := s.page(t, path)
		if len(body) > 1<<20+128<<10 {
			t.Errorf("page %s is %d bytes; want about 1 MiB at most", path, len(body))
		}
		var page agentPage
		s.api(t, path, &page)
		seen += len(page.Runs)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if pages < 2 || seen != len(runs) {
		t.Fatalf("%d pages list %d runs; want the %d runs on several pages", pages+1, seen, len(runs))
	}
}
