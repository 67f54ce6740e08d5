package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// messagesPerPage is how many messages a session page shows unless limit
// says.
const messagesPerPage = 200

// pageBytes bounds the content a session page shows besides its count of
// messages: 200 messages of a few kilobytes, as most are, fit, and the
// page stays small enough for a browser to lay out at once and for the
// live script to fetch again on every append.
const pageBytes = 1 << 20

// messageBytes is the most of one message's content, or of one kept
// transcript record, that a page shows; the rest is cut, with a link to
// the whole. It is a thousand lines or so, more than a person reads in
// place, while the output of a tool is often longer.
const messageBytes = 64 << 10

// sessionData is what a session page shows.
type sessionData struct {
	ID, Cwd, ImportedCwd string
	Created              string
	Parent, ForkPoint    string
	Children             []string
	Importing            bool   // on the first page: its import is unfinished, as the index says
	Title                string // on the first page: its title, as the index says
	Items                []item
	Next                 string // the cursor of the next page, "" on the last
	Start                bool   // no message comes before the page's, in its order
	Order                string // newest or oldest
	Toggle               string // the link to the other order
	Total                int    // the session's messages
	From, To             int    // the messages shown, counted from 1 in the page's order; 0 when none
	// First, Prev, NextLink and Last are the pager's links, "" where there
	// is no such page.
	First, Prev, NextLink, Last string
}

// item is one entry of a conversation page: a message, a compaction
// boundary or a kept transcript record.
type item struct {
	Seq      uint64
	Message  *messageItem
	Boundary *schema.CompactBoundary
	Record   string // a transcript record kept verbatim
	Cut      *cutItem
	// Shared marks, in a fork, a message copied from the parent, and
	// ForkPoint the last of them; Forks are the sessions forked from
	// this one at this message.
	Shared, ForkPoint bool
	Forks             []string
}

// messageItem is a message with what the page says about it.
type messageItem struct {
	UUID, Role, Time string
	Meta, Summary    bool
	Blocks           []blockItem
	Injected         *injection // set on context that hooks injected
}

// blockItem is one content block: text, or another block's JSON, folded.
// A long text shows its start, and the rest folded.
type blockItem struct {
	ID, Type, Text, Label, JSON string
	// ToolUseID is a tool_use's id, or the call a tool_result answers.
	ToolUseID string
	// Result, on a tool_use, is the tool_result block of the page that
	// answers it, which its call then shows; FoldedInto, on that result,
	// is the block of the call.
	Result     *blockItem
	FoldedInto string
	// Decided, on a tool_use, is how its hooks decided the call.
	Decided *decided
	// Subagent, on an Agent or Task call, is the turn of the subagent it
	// started.
	Subagent *subagentTurn
	Rest     string // the text after the start, for a long one
	// HTML is an answer's text rendered from Markdown, and RestHTML the
	// blocks after its start, RestBytes long, for a long one (Text and
	// Rest are then empty).
	HTML, RestHTML template.HTML
	RestBytes      int
	Summary        string // a call's input on one line, beside the folded block
	Error          bool   // a tool_result the model is told is an error
}

// summaryLength is the most characters of a call's input that a folded
// block shows beside its label.
const summaryLength = 120

// foldAfter is how many characters of a text block show before the rest
// is folded.
const foldAfter = 1200

// fold cuts a long text into the start shown and the rest folded.
func fold(b *blockItem) {
	n := 0
	for i := range b.Text {
		if n == foldAfter {
			if len(b.Text)-i > foldAfter/4 { // not worth folding a short tail
				b.Text, b.Rest = b.Text[:i], b.Text[i:]
			}
			return
		}
		n++
	}
}

// injection says which run of which agent injected a message, and what
// its hooks did.
type injection struct {
	Kind      string // the run's: restore or prompt
	RestoreID string
	Agent     string
	Event     string // SessionStart or UserPromptSubmit
	Hooks     []jsonview.Outcome
}

// sessionJSON is the API's answer for one session: the conversation
// object of reprise replay --json, holding the page's messages, what the
// page says beside them, the count of the session's messages, the
// position of the page's first, and the links to the first, previous,
// next and last pages.
type sessionJSON struct {
	jsonview.Conversation
	Parent      string            `json:"parent,omitempty"`
	ForkPoint   string            `json:"fork_point,omitempty"`
	Children    []string          `json:"children"`
	Importing   bool              `json:"import_unfinished,omitempty"`
	Title       string            `json:"title,omitempty"` // on the first page
	Injected    []injectedJSON    `json:"injected"`
	Compactions []compactionJSON  `json:"compactions"`
	Next        string            `json:"next_cursor,omitempty"`
	Records     []json.RawMessage `json:"records,omitempty"`
	Cut         []cutJSON         `json:"cut"`
	Total       int               `json:"total"` // the session's messages
	From        int               `json:"from"`  // the position of the page's first, from 1
	Pages       pagesJSON         `json:"pages"`
}

// injectedJSON names a message that hooks injected, and the run that did.
type injectedJSON struct {
	Message   string             `json:"message"`
	RestoreID string             `json:"restore_id"`
	Agent     string             `json:"agent,omitempty"`
	Event     string             `json:"event,omitempty"`
	Hooks     []jsonview.Outcome `json:"hooks"`
}

// compactionJSON is a compaction boundary on the page.
type compactionJSON struct {
	Boundary    string `json:"boundary"`
	Trigger     string `json:"trigger"`
	PreMessages int    `json:"pre_messages"`
	Seq         uint64 `json:"seq"`
}

// session shows one session's conversation, oldest first in JSON (as
// reprise replay --json prints it) and newest first on the page unless
// order says: a page from the cursor, a sequence of its stream, on
// (oldest first) or down (newest first).
//
// A page holds limit messages, with the compaction boundaries and kept
// records between them, and ends before the item after its last message
// (the last page, in either order, holds the items past the session's
// last message in that order). A cursor names the sequence a page
// starts at, never how many messages come before it, so that a link
// shows the same messages however many are appended: oldest first,
// messages are appended after every page, and newest first, a page holds
// the items at or below its cursor, which no append changes; only the
// first page, newest first, which has no cursor, shows what was appended
// since.
func (h *handler) session(r *http.Request) (*view, error) {
	ctx, id := r.Context(), r.PathValue("id")
	if reprise.ValidateID(id) != nil {
		return nil, noSession("no session %s", clip(id))
	}
	limit, err := queryLimit(r, messagesPerPage)
	if err != nil {
		return nil, err
	}
	var cursor uint64
	if v := r.URL.Query().Get("cursor"); v != "" {
		if cursor, err = strconv.ParseUint(v, 10, 64); err != nil || cursor < 1 {
			return nil, badRequest("bad cursor %q: want the next_cursor of a previous page", v)
		}
	}
	order, err := pageOrder(r)
	if err != nil {
		return nil, err
	}
	stream := projection.SessionStream(id)
	created, createdAt, err := h.sessionCreated(ctx, id)
	if err != nil {
		return nil, err
	}
	// The messages, counted from their events' types alone.
	list, err := scanRows(func(fn func(eventlog.Event) error) error { return h.e.Store().ReadStream(ctx, stream, 1, fn) },
		func(ev eventlog.Event) bool { return ev.Type == schema.TypeMessageAppended },
		func(ev eventlog.Event) uint64 { return ev.Seq }, around(order, cursor), limit+1)
	if err != nil {
		return nil, err
	}
	start := place(list, order)
	d := sessionData{ID: id, Cwd: created.Cwd, ImportedCwd: created.ImportedCwd, Created: shortTime(createdAt),
		Parent: created.Parent, ForkPoint: created.ForkPoint, Start: start == 0, Order: order, Total: list.n}
	out := sessionJSON{Conversation: jsonview.Conversation{Session: id, Cwd: created.Cwd, Created: jsonview.FormatTime(createdAt),
		Messages: []jsonview.Message{}}, Parent: created.Parent, ForkPoint: created.ForkPoint,
		Injected: []injectedJSON{}, Compactions: []compactionJSON{}, Cut: []cutJSON{}, Total: list.n}
	messages, shown, meta := 0, 0, false
	// full reports whether the page ends before the next item: after its
	// count of messages, unless no message is left (the items after the
	// last are on its page), or once what is left of its bytes may not
	// hold the next item shown whole.
	full := func() bool {
		return messages == limit && start+messages < list.n || shown > 0 && shown+messageBytes > pageBytes
	}
	// tally counts an item the page takes, for full.
	tally := func(e shownItem) {
		shown += e.c.Shown
		if e.msg != nil {
			messages++
		}
	}
	// take puts an item the page takes on it.
	take := func(e shownItem) {
		it := e.it
		switch {
		case e.msg != nil:
			out.Messages = append(out.Messages, *e.msg)
			meta = meta || e.meta
			it.Cut = h.cutOf(&out.Cut, messagePath(id, it.Seq), cutJSON{Seq: it.Seq, Message: e.msg.UUID}, e.c)
		case it.Boundary != nil:
			out.Compactions = append(out.Compactions, compactionJSON{Boundary: it.Boundary.UUID, Trigger: it.Boundary.Trigger,
				PreMessages: it.Boundary.PreMessages, Seq: it.Seq})
		default:
			it.Cut = h.cutOf(&out.Cut, messagePath(id, it.Seq), cutJSON{Seq: it.Seq}, e.c)
			if e.record != nil {
				out.Records = append(out.Records, e.record)
			}
		}
		d.Items = append(d.Items, it)
	}
	if order == oldestFirst {
		err = h.readItemsUp(ctx, stream, max(cursor, 1), list.last, full, func(e shownItem) { tally(e); take(e) }, &d.Next)
	} else {
		// The items are taken newest first, then put on the page oldest
		// first, as the rest of the page is worked out, and turned at the
		// end.
		top := list.last
		if cursor != 0 {
			top = min(cursor, top)
		}
		var taken []shownItem
		err = h.readItemsDown(ctx, stream, top, full, func(e shownItem) { tally(e); taken = append(taken, e) }, &d.Next)
		slices.Reverse(taken)
		for _, e := range taken {
			take(e)
		}
	}
	if err != nil {
		return nil, err
	}
	if messages > 0 {
		d.From, d.To = start+1, start+messages
	}
	// Which runs injected the page's context, and how its tool calls were
	// decided, is read once the page holds no large message, as reading
	// the agents may take the budget too.
	calls := foldResults(d.Items)
	if meta || calls {
		runs, tools, err := h.agentIndex(ctx)
		if err != nil {
			return nil, err
		}
		decide(d.Items, tools, h.opts.Prefix)
		for _, it := range d.Items {
			if it.Message == nil {
				continue
			}
			if r, ok := runs[it.Message.UUID]; ok {
				it.Message.Injected = injectedBy(r)
				out.Injected = append(out.Injected, injectedJSON{Message: r.Injected, RestoreID: r.ID,
					Agent: r.Agent, Event: it.Message.Injected.Event, Hooks: it.Message.Injected.Hooks})
			}
		}
	}
	if calls {
		if err := h.nestSubagents(ctx, d.Items, id, 1); err != nil {
			return nil, err
		}
	}
	children, row, err := h.indexed(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.Start {
		d.Children, d.Importing, d.Title = children, row.Importing, row.Title
	}
	if err := h.markForks(ctx, d.Items, created, children); err != nil {
		return nil, err
	}
	if order == newestFirst {
		slices.Reverse(d.Items)
		slices.Reverse(out.Messages)
		slices.Reverse(out.Compactions)
		slices.Reverse(out.Records)
		slices.Reverse(out.Cut)
		slices.Reverse(out.Injected)
	}
	out.Children = append([]string{}, d.Children...)
	out.Importing, out.Title, out.Next, out.From = d.Importing, d.Title, d.Next, d.From
	link := func(prefix, cursor, order string) string {
		v := url.Values{}
		if order != "" {
			v.Set("order", order)
		}
		if cursor != "" {
			v.Set("cursor", cursor)
		}
		if limit != messagesPerPage {
			v.Set("limit", strconv.Itoa(limit))
		}
		path := prefix + "/sessions/" + url.PathEscape(id)
		if len(v) == 0 {
			return path
		}
		return path + "?" + v.Encode()
	}
	// The page that starts at message i starts just past message i-1 in
	// its order, where the page before it ends, so that it holds the
	// records and boundaries between the two.
	cursorAt := func(i int) string {
		if order == oldestFirst {
			return strconv.FormatUint(inOrder(list, order, i-1).Seq+1, 10)
		}
		return strconv.FormatUint(inOrder(list, order, i-1).Seq-1, 10)
	}
	// The page's links, in its order unless that is the default of the
	// form they are for.
	pageLinksOf := func(prefix, def string) pagesJSON {
		o := order
		if o == def {
			o = ""
		}
		return pageLinks(list.n, start, limit, d.Next, cursorAt, func(c string) string { return link(prefix, c, o) })
	}
	pages := pageLinksOf(h.opts.Prefix, newestFirst)
	d.First, d.Prev, d.NextLink, d.Last = pages.First, pages.Prev, pages.Next, pages.Last
	if other := otherOrder(order); other == newestFirst {
		d.Toggle = link(h.opts.Prefix, "", "")
	} else {
		d.Toggle = link(h.opts.Prefix, "", other)
	}
	out.Pages = pageLinksOf(h.opts.Prefix+"/api", oldestFirst)
	return &view{Template: "session", Title: "Session " + id, Data: d, API: out}, nil
}

// shownItem is an item of a session page as the page shows it, before
// the page takes it: the item, and, for a message, its JSON; for a kept
// record, its JSON when whole; and what was cut.
type shownItem struct {
	it     item
	msg    *jsonview.Message
	meta   bool
	record json.RawMessage
	c      cut
}

// isItem reports whether ev is one a session page shows: a message, a
// compaction boundary or a kept transcript record.
func isItem(ev eventlog.Event) bool {
	switch ev.Type {
	case schema.TypeMessageAppended, schema.TypeCompactBoundary, schema.TypeTranscriptRecord:
		return true
	}
	return false
}

// shownItemOf returns the item that ev, of type isItem, and p, its
// payload, are on a page, which keeps no part of p.
func shownItemOf(ev eventlog.Event, p schema.Payload) (shownItem, error) {
	switch p := p.(type) {
	case *schema.MessageAppended:
		msg, c := cutMessage(p.Message, messageBytes)
		m := jsonview.NewMessage(msg)
		if c.Total > c.Shown {
			m.Content[c.Block] = newCutBlockJSON(msg.Content[c.Block])
		}
		return shownItem{it: item{Seq: ev.Seq, Message: newMessageItem(msg)}, msg: &m, meta: p.Message.IsMeta, c: c}, nil
	case *schema.CompactBoundary:
		return shownItem{it: item{Seq: ev.Seq, Boundary: p}}, nil
	case *schema.TranscriptRecord:
		record, c := cutText(string(p.Record), messageBytes)
		e := shownItem{it: item{Seq: ev.Seq, Record: strings.Clone(record)}, c: c}
		if c.Total == c.Shown && json.Valid(p.Record) {
			e.record = json.RawMessage(bytes.Clone(p.Record))
		}
		return e, nil
	}
	return shownItem{}, eventlog.Corruptf(ev.Stream, ev.Seq, "%s is not a message, a boundary or a record", ev.Type)
}

// readItemsUp passes to take the items of stream from sequence from on,
// oldest first, up to last, until full says the page ends, and sets next
// to the sequence of the item it ends before.
func (h *handler) readItemsUp(ctx context.Context, stream string, from, last uint64, full func() bool, take func(shownItem), next *string) error {
	err := h.readDecoded(ctx, stream, from, func(ev eventlog.Event) error {
		switch {
		case ev.Seq > last:
			return errEnough
		case !isItem(ev):
			return errSkip
		case full():
			*next = strconv.FormatUint(ev.Seq, 10)
			return errEnough
		}
		return nil
	}, func(ev eventlog.Event, p schema.Payload) error {
		e, err := shownItemOf(ev, p)
		if err == nil {
			take(e)
		}
		return err
	})
	if err != nil && !errors.Is(err, errEnough) {
		return err
	}
	return nil
}

// readItemsDown passes to take the items of stream from sequence top
// down, newest first, a span of sequences at a time, until full says the
// page ends, and sets next to the sequence of the item it ends before.
func (h *handler) readItemsDown(ctx context.Context, stream string, top uint64, full func() bool, take func(shownItem), next *string) error {
	for hi := top; hi > 0; hi -= min(hi, backSpan) {
		span, err := readSpan(ctx, h, stream, max(hi, backSpan)-backSpan+1, hi, isItem, shownItemOf)
		if err != nil {
			return err
		}
		for _, e := range span {
			if full() {
				*next = strconv.FormatUint(e.it.Seq, 10)
				return nil
			}
			take(e)
		}
	}
	return nil
}

// sessionCreated returns the event that created session id, and when,
// or a 404 for a session that does not exist or was deleted.
func (h *handler) sessionCreated(ctx context.Context, id string) (*schema.SessionCreated, int64, error) {
	stream := projection.SessionStream(id)
	last, err := headType(ctx, h.e.Store(), stream)
	switch {
	case err != nil:
		return nil, 0, err
	case last == "":
		return nil, 0, noSession("no session %s", id)
	case last == schema.TypeSessionDeleted:
		return nil, 0, noSession("session %s was deleted", id)
	}
	first, err := eventAt(ctx, h.e.Store(), stream, 1)
	if err != nil {
		return nil, 0, err
	}
	p, err := schema.Decode(first)
	if err != nil {
		return nil, 0, err
	}
	created, ok := p.(*schema.SessionCreated)
	if !ok {
		return nil, 0, eventlog.Corruptf(stream, 1, "%s before SessionCreated", first.Type)
	}
	return created, first.Time, nil
}

// headType returns the type of the last event of stream, "" when it has
// none, without copying its payload, which may be a long message.
func headType(ctx context.Context, store eventlog.Store, stream string) (eventlog.Type, error) {
	head, err := store.Head(ctx, stream)
	if err != nil || head == 0 {
		return "", err
	}
	var typ eventlog.Type
	err = store.ReadStream(ctx, stream, head, func(ev eventlog.Event) error {
		typ = ev.Type
		return errEnough
	})
	if err != nil && !errors.Is(err, errEnough) {
		return "", fmt.Errorf("read %s#%d: %w", stream, head, err)
	}
	return typ, nil
}

// cutOf describes the item that c cut, which whole serves whole: for the
// page, and in cuts, as at says, for the API's answer. It returns nil for
// an item shown whole.
func (h *handler) cutOf(cuts *[]cutJSON, whole string, at cutJSON, c cut) *cutItem {
	if c.Total == c.Shown {
		return nil
	}
	at.Bytes, at.Shown, at.Whole = c.Total, c.Shown, h.opts.Prefix+"/api"+whole
	*cuts = append(*cuts, at)
	return &cutItem{Bytes: c.Total, Shown: c.Shown, Whole: h.opts.Prefix + whole}
}

// messagePath is the path that serves the message at seq of session id
// whole.
func messagePath(id string, seq uint64) string {
	return "/sessions/" + url.PathEscape(id) + "/messages/" + strconv.FormatUint(seq, 10)
}

// newMessageItem describes m for the page.
func newMessageItem(m schema.Message) *messageItem {
	it := &messageItem{UUID: m.UUID, Role: m.Role, Time: shortTime(m.Timestamp), Meta: m.IsMeta, Summary: m.Summary}
	for i, b := range m.Content {
		id := m.UUID + "-" + itoa(i)
		if b.Type == "text" && b.Raw == nil {
			bi := blockItem{ID: id, Type: "text", Text: b.Text}
			if m.Role == "assistant" {
				bi.HTML, bi.RestHTML, bi.RestBytes = renderMarkdown(b.Text)
				bi.Text = ""
			} else {
				fold(&bi)
			}
			it.Blocks = append(it.Blocks, bi)
			continue
		}
		bi := blockItem{ID: id, Type: b.Type, Label: b.Type, JSON: indentJSON(b.Raw)}
		var head struct {
			Name      string          `json:"name"`
			ID        string          `json:"id"`
			ToolUseID string          `json:"tool_use_id"`
			Text      string          `json:"text"`
			Input     json.RawMessage `json:"input"`
			IsError   bool            `json:"is_error"`
		}
		if json.Unmarshal(b.Raw, &head) == nil {
			switch {
			case head.Name != "":
				bi.Label += " " + head.Name
				if head.ID != "" {
					bi.Label += " " + head.ID
				}
				if b.Type == "tool_use" {
					bi.ToolUseID = head.ID
				}
				bi.Summary = inputSummary(head.Input)
			case head.ToolUseID != "":
				bi.Label += " for " + head.ToolUseID
				if b.Type == "tool_result" {
					bi.ToolUseID = head.ToolUseID
				}
			}
			bi.Error = head.IsError
			if b.Type == "text" {
				bi.Text = head.Text
			}
		}
		it.Blocks = append(it.Blocks, bi)
	}
	return it
}

// inputSummary is a call's input on one line: a command as it is (Bash),
// any other input as its JSON, clipped to summaryLength characters; ""
// for none.
func inputSummary(raw json.RawMessage) string {
	var in map[string]any
	if json.Unmarshal(raw, &in) != nil || len(in) == 0 {
		return ""
	}
	s, ok := in["command"].(string)
	if !ok {
		b, err := encodeJSON(in)
		if err != nil {
			return ""
		}
		s = string(b)
	}
	return projection.Clip(s, summaryLength)
}

// indentJSON returns raw indented, without HTML escapes (a page escapes
// it as HTML), or as it is when it is not JSON.
func indentJSON(raw []byte) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, err := encodeIndented(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// injectedBy describes run r, which injected a message.
func injectedBy(r run) *injection {
	in := &injection{Kind: r.Kind, RestoreID: r.ID, Agent: r.Agent, Hooks: []jsonview.Outcome{}}
	for _, g := range r.Hooks {
		if g.Event == "SessionStart" || g.Event == "UserPromptSubmit" {
			in.Event = g.Event
			in.Hooks = append(in.Hooks, g.Outcomes...)
		}
	}
	return in
}

// indexed returns what the session index says of session id that its
// stream says only as a whole: the sessions forked from it, in the order
// they were created (a deleted fork has no row), and its own row, which
// says whether its import is unfinished and gives its title. A page,
// which reads a slice of the stream, cannot tell.
func (h *handler) indexed(ctx context.Context, id string) (forks []string, row projection.SessionInfo, err error) {
	sessions, err := h.e.Sessions(ctx)
	if err != nil {
		return nil, row, err
	}
	for _, s := range sessions {
		switch {
		case s.Parent == id:
			forks = append(forks, s.ID)
		case s.ID == id:
			row = s
		}
	}
	return forks, row, nil
}

// decided is how a tool call's hooks decided it: the decision, its
// reason, the hooks of each event with their status, and its row on the
// agent's timeline.
type decided struct {
	Decision, Reason string
	Hooks            []decidedHook
	Agent, Link      string
}

// decidedHook is one hook of a tool call's event, and how it ended.
type decidedHook struct {
	Event, Name, Status string
}

// foldResults folds each tool_result of items into the tool_use block
// of the page that it answers, and reports whether the page holds a
// tool call.
func foldResults(items []item) bool {
	uses := map[string]*blockItem{}
	for _, it := range items {
		if it.Message == nil {
			continue
		}
		for i := range it.Message.Blocks {
			b := &it.Message.Blocks[i]
			switch {
			case b.Type == "tool_use" && b.ToolUseID != "":
				uses[b.ToolUseID] = b
			case b.Type == "tool_result" && uses[b.ToolUseID] != nil && uses[b.ToolUseID].Result == nil:
				use := uses[b.ToolUseID]
				result := *b
				use.Result, b.FoldedInto = &result, use.ID
			}
		}
	}
	return len(uses) > 0
}

// decide gives each tool_use of items how its hooks decided it, from
// tools, the tool calls' rows by tool_use id.
func decide(items []item, tools map[string]run, prefix string) {
	for _, it := range items {
		if it.Message == nil {
			continue
		}
		for i := range it.Message.Blocks {
			b := &it.Message.Blocks[i]
			r, ok := tools[b.ToolUseID]
			if b.Type != "tool_use" || !ok {
				continue
			}
			d := &decided{Decision: r.Tool.Decision, Reason: r.Tool.Reason, Agent: r.Agent,
				Link: prefix + "/agents/" + url.PathEscape(r.Agent) + "#" + r.Anchor()}
			for _, g := range r.Hooks {
				for _, o := range g.Outcomes {
					d.Hooks = append(d.Hooks, decidedHook{Event: g.Event, Name: o.Name, Status: o.Status})
				}
			}
			b.Decided = d
		}
	}
}

// markForks marks, in items of a session created as created, the
// messages a fork copied from its parent, up to the fork point, and the
// messages of the session that children, its forks, were forked at.
func (h *handler) markForks(ctx context.Context, items []item, created *schema.SessionCreated, children []string) error {
	if created.Parent != "" && created.ForkPoint != "" && len(items) > 0 {
		shared, err := copiedUpTo(ctx, h.e.Store(), projection.SessionStream(created.ID))
		if err != nil {
			return err
		}
		for i := range items {
			items[i].Shared = items[i].Seq <= shared
			items[i].ForkPoint = items[i].Seq == shared
		}
	}
	at := map[string][]string{} // fork points, by message
	for _, c := range children {
		first, err := eventAt(ctx, h.e.Store(), projection.SessionStream(c), 1)
		if err != nil {
			return err
		}
		if p, err := schema.Decode(first); err == nil {
			if fc, ok := p.(*schema.SessionCreated); ok && fc.ForkPoint != "" {
				at[fc.ForkPoint] = append(at[fc.ForkPoint], c)
			}
		}
	}
	for i := range items {
		if m := items[i].Message; m != nil {
			items[i].Forks = at[m.UUID]
		}
	}
	return nil
}

// copiedUpTo returns the sequence of the last message a fork's stream
// copied from its parent: the fork is created with its copies in one
// append, at one time and at consecutive positions after its
// SessionCreated, which is sequence 1.
func copiedUpTo(ctx context.Context, store eventlog.Store, stream string) (uint64, error) {
	var first eventlog.Event
	last := uint64(0)
	err := store.ReadStream(ctx, stream, 1, func(ev eventlog.Event) error {
		if ev.Seq == 1 {
			first, last = ev, 1
			return nil
		}
		if ev.Time != first.Time || ev.Position != first.Position+ev.Seq-1 || ev.Type != schema.TypeMessageAppended {
			return errEnough
		}
		last = ev.Seq
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return 0, fmt.Errorf("read the copies of %s: %w", stream, err)
	}
	return last, nil
}

// subagentTurn is a subagent's session as the call that started it shows
// it: its first messages, each as its own page shows it.
type subagentTurn struct {
	ID, Type, Description string
	Link                  string // its own page
	Items                 []item
	More                  bool // it has more messages than these
}

// Subagents are shown nested at most maxNesting deep, each with at most
// nestedMessages of its messages: its page has the rest.
const (
	maxNesting     = 3
	nestedMessages = 20
)

// nestSubagents puts under each call of items, in session, that started
// a subagent, the subagent's turn, its own calls' subagents nested in
// turn, depth levels deep at most maxNesting.
func (h *handler) nestSubagents(ctx context.Context, items []item, session string, depth int) error {
	prefix := h.opts.Prefix
	if depth > maxNesting {
		return nil
	}
	sessions, err := h.e.Sessions(ctx)
	if err != nil {
		return err
	}
	started := map[string]*schema.SessionCreated{} // by the call's tool_use id
	for _, si := range sessions {
		if si.Subagent == nil || si.Subagent.Session != session {
			continue
		}
		// The index keeps only the parent; the call is in the creation.
		first, err := eventAt(ctx, h.e.Store(), projection.SessionStream(si.ID), 1)
		if err != nil {
			return err
		}
		p, err := schema.Decode(first)
		if err != nil {
			return err
		}
		if c, ok := p.(*schema.SessionCreated); ok && c.Subagent != nil {
			started[c.Subagent.ToolUseID] = c
		}
	}
	if len(started) == 0 {
		return nil
	}
	for _, it := range items {
		if it.Message == nil {
			continue
		}
		for i := range it.Message.Blocks {
			b := &it.Message.Blocks[i]
			si, ok := started[b.ToolUseID]
			if b.Type != "tool_use" || !ok {
				continue
			}
			turn := &subagentTurn{ID: si.ID, Type: si.Subagent.Type, Description: si.Subagent.Description,
				Link: prefix + "/sessions/" + url.PathEscape(si.ID)}
			err := h.e.Store().ReadStream(ctx, projection.SessionStream(si.ID), 1, func(ev eventlog.Event) error {
				if ev.Type != schema.TypeMessageAppended {
					return nil
				}
				if len(turn.Items) == nestedMessages {
					turn.More = true
					return errEnough
				}
				p, err := schema.Decode(ev)
				if err != nil {
					return err
				}
				msg, _ := cutMessage(p.(*schema.MessageAppended).Message, messageBytes)
				turn.Items = append(turn.Items, item{Seq: ev.Seq, Message: newMessageItem(msg)})
				return nil
			})
			if err != nil && !errors.Is(err, errEnough) {
				return fmt.Errorf("read subagent %s: %w", si.ID, err)
			}
			foldResults(turn.Items)
			if err := h.nestSubagents(ctx, turn.Items, si.ID, depth+1); err != nil {
				return err
			}
			b.Subagent = turn
		}
	}
	return nil
}
