package anthropic_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/reprise-dev/reprise"
	rpanthropic "github.com/reprise-dev/reprise/adapters/anthropic"
	"github.com/reprise-dev/reprise/schema"
)

const model = "claude-sonnet-4-5"

// send rebuilds session id's conversation from e and sends it through the
// real SDK client.
func send(t *testing.T, e *reprise.Engine, client anthropic.Client, id string) *anthropic.Message {
	t.Helper()
	ctx := context.Background()
	conv, err := e.Conversation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := rpanthropic.MessageParams(conv)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: model, MaxTokens: 1024, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// The request the SDK sends for a rebuilt conversation holding every block
// kind is the one written by hand in request1.json, field by field: turns
// merged so that roles alternate, the meta messages as user text, the
// tool_result hoisted before the reminder injected after its tool_use, and
// every non-text block as it was stored.
func TestRequestFieldByField(t *testing.T) {
	e := newEngine(t)
	id, _ := testSession(t, e)
	api := newFakeAPI(t, "response1.json")
	send(t, e, api.client(), id)

	req := api.request(0)
	if req.Method != "POST" || req.Path != "/v1/messages" {
		t.Errorf("request %s %s, want POST /v1/messages", req.Method, req.Path)
	}
	// This SDK version sends the API key as a bearer token.
	if key, auth := req.Header.Get("X-Api-Key"), req.Header.Get("Authorization"); key != "test" && auth != "Bearer test" {
		t.Errorf("x-api-key %q, authorization %q: the API key test was not sent", key, auth)
	}
	if req.Header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	want := decode(t, readTestdata(t, "request1.json"))
	got := decode(t, req.Body)
	checkJSON(t, "request", want, got)

	// The request holds every block kind, so the comparison above covered
	// each of them.
	kinds := map[string]bool{}
	roles := []string{}
	for _, m := range got.(map[string]any)["messages"].([]any) {
		m := m.(map[string]any)
		roles = append(roles, m["role"].(string))
		for _, b := range m["content"].([]any) {
			kinds[b.(map[string]any)["type"].(string)] = true
		}
	}
	for _, k := range []string{"text", "image", "document", "thinking", "redacted_thinking", "tool_use", "tool_result"} {
		if !kinds[k] {
			t.Errorf("the request has no %s block", k)
		}
	}
	if strings.Join(roles, " ") != "user assistant user assistant user" {
		t.Errorf("roles %v do not alternate from user", roles)
	}
}

// A response appended to a real Engine, the conversation rebuilt and sent
// again: the second request is request2.json, the first one's turns
// unchanged and the response's blocks as the API returned them.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	id, _ := testSession(t, e)
	api := newFakeAPI(t, "response1.json", "response2.json")
	client := api.client()

	resp1 := send(t, e, client, id)
	stored, err := rpanthropic.Append(ctx, e, id, resp1)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Role != "assistant" || stored.IsMeta {
		t.Errorf("stored role %q meta %v, want a plain assistant message", stored.Role, stored.IsMeta)
	}
	var types []string
	for _, b := range stored.Content {
		types = append(types, b.Type)
	}
	if strings.Join(types, " ") != "thinking text text tool_use" {
		t.Errorf("stored blocks %v", types)
	}
	if stored.Content[1].Text != "The spec says the first retry waits 100ms." || stored.Content[1].Raw == nil {
		t.Errorf("text block with citations stored as %+v, want its text and its JSON", stored.Content[1])
	}
	if stored.Content[2].Text != " I will sleep before doubling the delay." || stored.Content[2].Raw != nil {
		t.Errorf("plain text block stored as %+v, want its text alone", stored.Content[2])
	}

	appendToolResult(t, e, id, "toolu_03Edit", "The file /src/app/retry.go has been updated.")
	resp2 := send(t, e, client, id)
	req1, req2 := decode(t, api.request(0).Body), decode(t, api.request(1).Body)
	checkJSON(t, "request2", decode(t, readTestdata(t, "request2.json")), req2)

	// Nothing of the first request changed, and the assistant turn is the
	// response's content, block for block (less its null fields).
	msgs1 := req1.(map[string]any)["messages"].([]any)
	msgs2 := req2.(map[string]any)["messages"].([]any)
	if len(msgs2) != len(msgs1)+2 {
		t.Fatalf("second request has %d messages, want %d", len(msgs2), len(msgs1)+2)
	}
	checkJSON(t, "first turns", msgs1, msgs2[:len(msgs1)])
	response := decode(t, readTestdata(t, "response1.json")).(map[string]any)
	turn := msgs2[len(msgs1)].(map[string]any)
	checkJSON(t, "assistant turn", map[string]any{"role": "assistant", "content": dropNulls(response["content"])}, turn)

	// The usage is recorded with the message, and read back.
	got, err := rpanthropic.Usage(stored)
	if err != nil {
		t.Fatal(err)
	}
	if got.InputTokens != 2048 || got.OutputTokens != 256 || got.CacheCreationInputTokens != 512 ||
		got.CacheReadInputTokens != 1024 || got.CacheCreation.Ephemeral5mInputTokens != 512 || got.ServiceTier != "standard" {
		t.Errorf("usage %s", got.RawJSON())
	}
	checkJSON(t, "usage", response["usage"], decode(t, []byte(got.RawJSON())))

	// The second response, appended, rebuilds into the third request.
	if _, err := rpanthropic.Append(ctx, e, id, resp2); err != nil {
		t.Fatal(err)
	}
	conv, err := e.Conversation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	params, err := rpanthropic.MessageParams(conv)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]any(nil), msgs2...), map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "text", "text": "Fixed: the first retry now waits 100ms, as the spec says."}}})
	checkJSON(t, "third request", want, paramsJSON(t, params))
}

// The appended message exports as the line Claude Code writes for an
// assistant message, with the response in it verbatim; imported again, it
// has the same blocks and usage.
func TestExportedLine(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	id, _ := testSession(t, e)
	api := newFakeAPI(t, "response1.json")
	before, err := e.Conversation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := rpanthropic.Append(ctx, e, id, send(t, e, api.client(), id))
	if err != nil {
		t.Fatal(err)
	}
	info, err := e.Session(ctx, id)
	if err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	if err := e.Export(ctx, id, &out); err != nil {
		t.Fatal(err)
	}
	exported := out.Bytes()
	var line map[string]any
	scan := bufio.NewScanner(bytes.NewReader(exported))
	scan.Buffer(nil, 1<<20)
	for scan.Scan() {
		var l map[string]any
		if err := json.Unmarshal(scan.Bytes(), &l); err != nil {
			t.Fatalf("export wrote a line that is not JSON: %s", scan.Bytes())
		}
		if l["uuid"] == stored.UUID {
			line = decode(t, scan.Bytes()).(map[string]any)
		}
	}
	if line == nil {
		t.Fatalf("export has no line for %s", stored.UUID)
	}
	checkJSON(t, "line", map[string]any{
		"parentUuid":  before[len(before)-1].UUID,
		"isSidechain": false,
		"userType":    "external",
		"cwd":         info.Cwd,
		"sessionId":   id,
		"message":     decode(t, readTestdata(t, "response1.json")),
		"type":        "assistant",
		"uuid":        stored.UUID,
		"timestamp":   time.Unix(0, stored.Timestamp).UTC().Format("2006-01-02T15:04:05.000Z"),
	}, line)
	if stored.ParentUUID != before[len(before)-1].UUID {
		t.Errorf("stored parent %s, want %s", stored.ParentUUID, before[len(before)-1].UUID)
	}

	rep, err := e.Import(ctx, bytes.NewReader(exported), reprise.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.FullConversation(ctx, rep.Session)
	if err != nil {
		t.Fatal(err)
	}
	var back *schema.Message
	for i := range again {
		if again[i].UUID == stored.UUID {
			back = &again[i]
		}
	}
	if back == nil {
		t.Fatalf("re-import lost message %s", stored.UUID)
	}
	if back.ParentUUID != stored.ParentUUID || back.Timestamp != stored.Timestamp || len(back.Content) != len(stored.Content) {
		t.Errorf("re-imported %+v, want %+v", back, stored)
	}
	for i, b := range back.Content {
		s := stored.Content[i]
		if b.Type != s.Type || b.Text != s.Text || (s.Type != "text" && !bytes.Equal(b.Raw, s.Raw)) {
			t.Errorf("re-imported block %d %+v, want %+v", i, b, s)
		}
	}
	u1, err1 := rpanthropic.Usage(stored)
	u2, err2 := rpanthropic.Usage(*back)
	if err1 != nil || err2 != nil || u1.RawJSON() != u2.RawJSON() {
		t.Errorf("usage %s (%v) after re-import, want %s (%v)", u2.RawJSON(), err2, u1.RawJSON(), err1)
	}
}

// After a compaction the request starts at the summary, as
// Engine.Conversation does.
func TestCompactedConversation(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	id, agent := testSession(t, e)
	if _, err := agent.Compact(ctx, "The first retry waited 200ms; retry.go doubles before sleeping."); err != nil {
		t.Fatal(err)
	}
	appendToolResult(t, e, id, "toolu_02Read", readOutput) // a late result, after the summary
	api := newFakeAPI(t, "response2.json")
	send(t, e, api.client(), id)
	got := decode(t, api.request(0).Body).(map[string]any)["messages"].([]any)
	if len(got) != 1 {
		t.Fatalf("%d turns after compaction, want one user turn: %s", len(got), show(got))
	}
	content := got[0].(map[string]any)["content"].([]any)
	first := content[0].(map[string]any)
	if first["type"] != "tool_result" {
		t.Errorf("the user turn opens with %s, want the tool_result", show(first))
	}
	summary := content[1].(map[string]any)
	if summary["type"] != "text" || !strings.HasPrefix(summary["text"].(string), reprise.CompactSummaryPrefix) ||
		!strings.Contains(summary["text"].(string), "doubles before sleeping") {
		t.Errorf("summary block %s", show(summary))
	}
}

// Usage reads the usage Claude Code recorded in an imported transcript too.
func TestUsageOfImportedMessage(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	id, _ := testSession(t, e)
	conv, err := e.Conversation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	u, err := rpanthropic.Usage(conv[2]) // the thinking line
	if err != nil {
		t.Fatal(err)
	}
	if u.InputTokens != 1200 || u.OutputTokens != 8 {
		t.Errorf("usage %s", u.RawJSON())
	}
	if _, err := rpanthropic.Usage(conv[len(conv)-1]); !errors.Is(err, rpanthropic.ErrNoUsage) {
		t.Errorf("usage of a host's tool result: %v, want ErrNoUsage", err)
	}
}

func text(role, s string) schema.Message { return reprise.Text(role, s) }

func raw(role, typ, js string) schema.Message {
	return schema.Message{Role: role, Content: []schema.Block{{Type: typ, Raw: []byte(js)}}}
}

// Merging, hoisting and dropping, on conversations built by hand.
func TestMessageParamsShapes(t *testing.T) {
	meta := text("user", "<system-reminder>\nctx\n</system-reminder>")
	meta.IsMeta = true
	cases := []struct {
		name string
		conv []schema.Message
		want string
	}{
		{"empty", nil, `[]`},
		{"one prompt", []schema.Message{text("user", "hi")},
			`[{"role":"user","content":[{"type":"text","text":"hi"}]}]`},
		{"assistant lines merge", []schema.Message{text("user", "hi"), text("assistant", "a"), text("assistant", "b")},
			`[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`},
		{"meta after prompt", []schema.Message{text("user", "hi"), meta},
			`[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"<system-reminder>\nctx\n</system-reminder>"}]}]`},
		{"results hoisted, in order", []schema.Message{
			raw("assistant", "tool_use", `{"type":"tool_use","id":"t1","name":"A","input":{}}`),
			meta,
			raw("user", "tool_result", `{"type":"tool_result","tool_use_id":"t1","content":"1"}`),
			text("user", "and"),
			raw("user", "tool_result", `{"type":"tool_result","tool_use_id":"t2","content":"2"}`)},
			`[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"A","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"1"},{"type":"tool_result","tool_use_id":"t2","content":"2"},` +
				`{"type":"text","text":"<system-reminder>\nctx\n</system-reminder>"},{"type":"text","text":"and"}]}]`},
		{"empty message dropped", []schema.Message{text("user", "hi"), {Role: "assistant"}, text("user", "again")},
			`[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"again"}]}]`},
		{"text with stored JSON", []schema.Message{raw("assistant", "text", `{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}`)},
			`[{"role":"assistant","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}]`},
		{"unknown kind verbatim", []schema.Message{raw("assistant", "fancy_block", `{"type":"fancy_block","x":[1,2]}`)},
			`[{"role":"assistant","content":[{"type":"fancy_block","x":[1,2]}]}]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			params, err := rpanthropic.MessageParams(c.conv)
			if err != nil {
				t.Fatal(err)
			}
			checkJSON(t, "params", decode(t, []byte(c.want)), paramsJSON(t, params))
		})
	}
}

func TestMessageParamsErrors(t *testing.T) {
	cases := map[string]schema.Message{
		"role":          text("system", "x"),
		"no JSON":       {Role: "user", Content: []schema.Block{{Type: "image"}}},
		"not an object": raw("user", "image", `[1]`),
		"broken JSON":   raw("user", "image", `{"type":`),
		"other type":    raw("user", "image", `{"type":"document"}`),
	}
	for name, m := range cases {
		if _, err := rpanthropic.MessageParams([]schema.Message{m}); !errors.Is(err, rpanthropic.ErrUnmappable) {
			t.Errorf("%s: %v, want ErrUnmappable", name, err)
		}
	}
}

func TestFromResponseErrors(t *testing.T) {
	if _, err := rpanthropic.FromResponse(nil, rpanthropic.Line{}); !errors.Is(err, rpanthropic.ErrNoJSON) {
		t.Errorf("nil response: %v", err)
	}
	if _, err := rpanthropic.FromResponse(&anthropic.Message{Role: "assistant"}, rpanthropic.Line{}); !errors.Is(err, rpanthropic.ErrNoJSON) {
		t.Errorf("response built in Go: %v", err)
	}
	if _, err := rpanthropic.Usage(schema.Message{Role: "assistant"}); !errors.Is(err, rpanthropic.ErrNoUsage) {
		t.Errorf("usage without a record: %v", err)
	}
}

// FromResponse fills the line's place as given, to the millisecond.
func TestFromResponseLine(t *testing.T) {
	var resp anthropic.Message
	if err := resp.UnmarshalJSON(readTestdata(t, "response2.json")); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 5, 10, 0, 7, 123456789, time.UTC)
	m, err := rpanthropic.FromResponse(&resp, rpanthropic.Line{Session: "s", Cwd: "/src/app", Parent: "p", UUID: "u", Time: at, RequestID: "req_1"})
	if err != nil {
		t.Fatal(err)
	}
	if m.UUID != "u" || m.ParentUUID != "p" || m.Timestamp != at.Truncate(time.Millisecond).UnixNano() {
		t.Errorf("message %+v", m)
	}
	checkJSON(t, "record", map[string]any{
		"parentUuid": "p", "isSidechain": false, "userType": "external", "cwd": "/src/app", "sessionId": "s",
		"message": decode(t, readTestdata(t, "response2.json")), "requestId": "req_1",
		"type": "assistant", "uuid": "u", "timestamp": "2026-01-05T10:00:07.123Z",
	}, decode(t, m.Record))
	if bytes.ContainsRune(m.Record, '\n') {
		t.Errorf("record spans lines: %s", m.Record)
	}
	// In a subagent's session, a sidechain of its parent's.
	m, err = rpanthropic.FromResponse(&resp, rpanthropic.Line{Session: "s", Cwd: "/src/app", Parent: "p", UUID: "u", Time: at, AgentID: "a0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	checkJSON(t, "sidechain record", map[string]any{
		"parentUuid": "p", "isSidechain": true, "agentId": "a0123456789abcdef", "userType": "external", "cwd": "/src/app", "sessionId": "s",
		"message": decode(t, readTestdata(t, "response2.json")),
		"type":    "assistant", "uuid": "u", "timestamp": "2026-01-05T10:00:07.123Z",
	}, decode(t, m.Record))
}
