package projection

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
)

// SessionInfo is one row of the session index.
type SessionInfo struct {
	ID          string
	Cwd         string
	ImportedCwd string // the cwd an imported transcript named, never used to run hooks
	Parent      string // the session a fork copied, "" for none
	// Subagent, in a subagent's session, names the call that started it;
	// the session index keeps only its Session, the parent's.
	Subagent *schema.Subagent
	Created  int64 // UTC unix nanoseconds
	Messages int
	// LastRestored is when an agent last loaded the session; 0 if never.
	LastRestored int64
	// LastActivity is when the session was last used: the time of its
	// stream's last event, or when an agent last loaded it, if later.
	LastActivity int64
	// Importing marks a session whose import started and did not finish:
	// it holds only the first part of its transcript.
	Importing bool
	// Newer marks a session holding events of a payload version newer
	// than this build reads: what the row shows of them may be incomplete
	// (a SessionCreated of a newer version leaves Cwd empty).
	Newer bool
	// Title names the session for a list: the last title its hooks gave
	// (a SessionStart or UserPromptSubmit hook's sessionTitle, at most
	// HookTitleLength characters), else the summary record of an imported
	// Claude Code transcript, else the first line of its first user
	// prompt, at most TitleLength characters; "" while it has none.
	Title string
}

// TitleLength is the longest title a prompt or a summary record gives,
// in characters.
const TitleLength = 80

// HookTitleLength is the longest title a hook gives, in characters, as
// Claude Code keeps it.
const HookTitleLength = 200

// SessionIndex is the eventlog.Indexer of the session list: one row per
// session, keyed by its id, dropped when the session is deleted. A store
// that keeps it (eventlog.Indexed) lists sessions without reading the
// log; Sessions decodes its rows.
var SessionIndex eventlog.Indexer = sessionIndex{}

type sessionIndex struct{}

// Name implements eventlog.Indexer. The version changes with the rows'
// encoding or with what the fold puts in them: a store holding rows of
// another version builds them again.
func (sessionIndex) Name() string { return "sessions/4" }

// A row is fixed fields, so that the common update, one more message,
// patches bytes instead of decoding and encoding the row, then the two
// working directories, the title and the parent:
//
//	created u64, messages u64, last restored u64, last activity u64,
//	flags u8 (1 importing, 2 newer, 4 titled by a summary, 8 by a hook),
//	len(cwd) u32, len(imported cwd) u32, len(title) u32,
//	cwd, imported cwd, title, parent
const (
	rowCreated      = 0
	rowMessages     = 8
	rowLastRestored = 16
	rowLastActivity = 24
	rowFlags        = 32
	rowCwdLen       = 33
	rowImportedLen  = 37
	rowTitleLen     = 41
	rowFixed        = 45

	flagImporting    = 1
	flagNewer        = 2
	flagSummaryTitle = 4
	flagHookTitle    = 8
	flagSubagent     = 16 // the row's parent is the session of the call that started it, not a fork's
)

// Apply implements eventlog.Indexer. An event newer than this build reads
// does not stop the fold: its session's row is marked, and what the event
// would say is left out.
func (sessionIndex) Apply(rows eventlog.Rows, ev eventlog.Event) error {
	id := SessionID(ev.Stream)
	if id == "" {
		return applyAgentEvent(rows, ev)
	}
	newer := ev.Version > schema.Version(ev.Type)
	switch ev.Type {
	case schema.TypeSessionDeleted:
		rows.Put(id, nil)
		return nil
	case schema.TypeSessionCreated:
		s := SessionInfo{ID: id, Created: ev.Time, LastActivity: ev.Time, Newer: newer}
		if !newer {
			p, err := schema.Decode(ev)
			if err != nil {
				return err
			}
			created := p.(*schema.SessionCreated)
			s.Cwd, s.ImportedCwd, s.Parent, s.Subagent = created.Cwd, created.ImportedCwd, created.Parent, created.Subagent
		}
		rows.Put(id, encodeRow(&s))
		return nil
	}
	row, err := rows.Get(id)
	if err != nil {
		return err
	}
	if row == nil {
		if ev.Type == schema.TypeMessageAppended {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "message for a session that was never created")
		}
		return nil
	}
	if len(row) < rowFixed {
		return rowError(id)
	}
	row = bytes.Clone(row)
	raise(row, rowLastActivity, ev.Time)
	if newer {
		row[rowFlags] |= flagNewer
	}
	switch ev.Type {
	case schema.TypeMessageAppended: // counting needs no payload, whatever its version
		binary.BigEndian.PutUint64(row[rowMessages:], binary.BigEndian.Uint64(row[rowMessages:])+1)
		if binary.BigEndian.Uint32(row[rowTitleLen:]) == 0 && !newer {
			// Until the session has a title, each message is read for one.
			p, err := schema.Decode(ev)
			if err != nil {
				return err
			}
			if title := promptTitle(&p.(*schema.MessageAppended).Message); title != "" {
				if row, err = retitle(id, row, title, 0); err != nil {
					return err
				}
			}
		}
	case schema.TypeTranscriptRecord:
		if row[rowFlags]&(flagSummaryTitle|flagHookTitle) != 0 || newer {
			break
		}
		p, err := schema.Decode(ev)
		if err != nil {
			return err
		}
		if title := summaryTitle(p.(*schema.TranscriptRecord).Record); title != "" {
			if row, err = retitle(id, row, title, flagSummaryTitle); err != nil {
				return err
			}
		}
	case schema.TypeImportStarted:
		row[rowFlags] |= flagImporting
	case schema.TypeImportFinished:
		row[rowFlags] &^= flagImporting
	}
	rows.Put(id, row)
	return nil
}

// applyAgentEvent folds ev, an event of an agent's stream, into the row
// of the session it names: when an agent loaded it (SessionLoaded), and
// the title its hooks gave (SessionStartHookRan, PromptHookRan).
func applyAgentEvent(rows eventlog.Rows, ev eventlog.Event) error {
	switch {
	case ev.Version > schema.Version(ev.Type):
		return nil
	case ev.Type != schema.TypeSessionLoaded && ev.Type != schema.TypeSessionStartHookRan && ev.Type != schema.TypePromptHookRan:
		return nil
	}
	p, err := schema.Decode(ev)
	if err != nil {
		return err
	}
	var id, title string
	switch p := p.(type) {
	case *schema.SessionLoaded:
		id = p.Session
	case *schema.SessionStartHookRan:
		if id, title = p.Session, startTitle(p); title == "" {
			return nil
		}
	case *schema.PromptHookRan:
		if id, title = p.Session, promptHookTitle(p); title == "" {
			return nil
		}
	}
	row, err := rows.Get(id)
	if err != nil || row == nil {
		return err
	}
	if title != "" {
		row, err = retitle(id, row, title, flagHookTitle)
		if err != nil {
			return err
		}
	} else {
		row = bytes.Clone(row)
		binary.BigEndian.PutUint64(row[rowLastRestored:], uint64(ev.Time))
		raise(row, rowLastActivity, ev.Time)
	}
	rows.Put(id, row)
	return nil
}

// startTitle returns the title SessionStart hooks gave their session, as
// Claude Code takes one: on startup (a new session too), resume and fork,
// not on clear or compact, and not from a run cut short.
func startTitle(p *schema.SessionStartHookRan) string {
	switch p.Source {
	case schema.SourceStartup, schema.SourceNew, schema.SourceResume, schema.SourceFork:
		if !p.Interrupted {
			return hookTitle(p.Outcomes)
		}
	}
	return ""
}

// promptHookTitle returns the title UserPromptSubmit hooks gave their
// session, as Claude Code takes one: only when the prompt went on, not
// when a hook blocked it or said "continue": false, nor from a run cut
// short.
func promptHookTitle(p *schema.PromptHookRan) string {
	if p.Blocked || p.Interrupted || p.Deleted || slices.ContainsFunc(p.Outcomes, func(o schema.HookOutcome) bool { return o.Halt }) {
		return ""
	}
	return hookTitle(p.Outcomes)
}

// hookTitle returns the title a run's outcomes give: the last non-empty
// string sessionTitle of their Specific fields, in the order the hooks
// were configured, made fit to show on one line (OneLine); "" when
// there is none, or when what is left is blank.
func hookTitle(outs []schema.HookOutcome) string {
	last := ""
	for _, o := range outs {
		var spec struct {
			Title string `json:"sessionTitle"`
		}
		if o.Specific != nil && json.Unmarshal(o.Specific, &spec) == nil && spec.Title != "" {
			last = spec.Title
		}
	}
	return OneLine(last, HookTitleLength)
}

// OneLine makes text a hook gave to show (a title, a status message) fit
// one line, as Claude Code shows it: each run of control and format
// characters, and of line and paragraph separators, becomes one space;
// then the first n characters are kept, spaces around them trimmed. Such
// text can then neither forge a line nor reach a terminal.
func OneLine(s string, n int) string {
	var b strings.Builder
	kept, gap := 0, false
	for _, r := range strings.TrimSpace(s) {
		if unicode.In(r, unicode.Cc, unicode.Cf) || r == '\u2028' || r == '\u2029' {
			gap = true
			continue
		}
		if gap {
			b.WriteByte(' ')
			gap, kept = false, kept+1
		}
		if kept >= n {
			break
		}
		b.WriteRune(r)
		kept++
	}
	return strings.TrimSpace(b.String())
}

// raise sets the time at off in row to t if t is later.
func raise(row []byte, off int, t int64) {
	if uint64(t) > binary.BigEndian.Uint64(row[off:]) {
		binary.BigEndian.PutUint64(row[off:], uint64(t))
	}
}

// promptTitle returns the title a message gives its session: the first
// line of its text when it is a prompt the user typed (not meta, not a
// tool's result, not a compaction's summary), clipped; "" otherwise.
func promptTitle(m *schema.Message) string {
	if m.Role != "user" || m.IsMeta || m.Summary {
		return ""
	}
	for _, b := range m.Content {
		if b.Type == "tool_result" {
			return ""
		}
		if b.Type == "text" {
			if line, _, _ := strings.Cut(strings.TrimSpace(b.Text), "\n"); line != "" {
				return Clip(strings.TrimSpace(line), TitleLength)
			}
		}
	}
	return ""
}

// summaryTitle returns the summary of record, a line of an imported
// transcript, when it is a summary record; "" otherwise.
func summaryTitle(record []byte) string {
	var r struct {
		Type    string `json:"type"`
		Summary string `json:"summary"`
	}
	if json.Unmarshal(record, &r) != nil || r.Type != "summary" {
		return ""
	}
	return Clip(strings.TrimSpace(r.Summary), TitleLength)
}

// retitle returns row with title as the session's title, marked with
// flag: flagSummaryTitle for a summary record's, which no prompt
// replaces, flagHookTitle for a hook's, which neither a prompt nor a
// summary replaces.
func retitle(id string, row []byte, title string, flag byte) ([]byte, error) {
	s, err := decodeRow(id, row)
	if err != nil {
		return nil, err
	}
	s.Title = title
	row = encodeRow(&s)
	row[rowFlags] |= flag
	return row, nil
}

func encodeRow(s *SessionInfo) []byte {
	row := make([]byte, rowFixed, rowFixed+len(s.Cwd)+len(s.ImportedCwd)+len(s.Title)+len(s.Parent))
	binary.BigEndian.PutUint64(row[rowCreated:], uint64(s.Created))
	binary.BigEndian.PutUint64(row[rowMessages:], uint64(s.Messages))
	binary.BigEndian.PutUint64(row[rowLastRestored:], uint64(s.LastRestored))
	binary.BigEndian.PutUint64(row[rowLastActivity:], uint64(s.LastActivity))
	if s.Importing {
		row[rowFlags] |= flagImporting
	}
	if s.Newer {
		row[rowFlags] |= flagNewer
	}
	parent := s.Parent
	if s.Subagent != nil {
		row[rowFlags] |= flagSubagent
		parent = s.Subagent.Session
	}
	binary.BigEndian.PutUint32(row[rowCwdLen:], uint32(len(s.Cwd)))
	binary.BigEndian.PutUint32(row[rowImportedLen:], uint32(len(s.ImportedCwd)))
	binary.BigEndian.PutUint32(row[rowTitleLen:], uint32(len(s.Title)))
	row = append(row, s.Cwd...)
	row = append(row, s.ImportedCwd...)
	row = append(row, s.Title...)
	return append(row, parent...)
}

func decodeRow(id string, row []byte) (SessionInfo, error) {
	if len(row) < rowFixed {
		return SessionInfo{}, rowError(id)
	}
	cwd := int(binary.BigEndian.Uint32(row[rowCwdLen:]))
	imported := int(binary.BigEndian.Uint32(row[rowImportedLen:]))
	title := int(binary.BigEndian.Uint32(row[rowTitleLen:]))
	if cwd > len(row)-rowFixed || imported > len(row)-rowFixed-cwd || title > len(row)-rowFixed-cwd-imported {
		return SessionInfo{}, rowError(id)
	}
	strs := row[rowFixed:]
	flags := row[rowFlags]
	var sub *schema.Subagent
	parent := string(strs[cwd+imported+title:])
	if flags&flagSubagent != 0 {
		sub, parent = &schema.Subagent{Session: parent}, ""
	}
	return SessionInfo{
		ID:           id,
		Cwd:          string(strs[:cwd]),
		ImportedCwd:  string(strs[cwd : cwd+imported]),
		Title:        string(strs[cwd+imported : cwd+imported+title]),
		Parent:       parent,
		Subagent:     sub,
		Created:      int64(binary.BigEndian.Uint64(row[rowCreated:])),
		Messages:     int(binary.BigEndian.Uint64(row[rowMessages:])),
		LastRestored: int64(binary.BigEndian.Uint64(row[rowLastRestored:])),
		LastActivity: int64(binary.BigEndian.Uint64(row[rowLastActivity:])),
		Importing:    flags&flagImporting != 0,
		Newer:        flags&flagNewer != 0,
	}, nil
}

func rowError(id string) error {
	return fmt.Errorf("%w: the session index row of %s is damaged", eventlog.ErrCorrupt, id)
}

// Sessions decodes the rows of SessionIndex (as eventlog.ReadRows returns
// them) into the session list, ordered by creation time, then id.
func Sessions(rows map[string][]byte) ([]SessionInfo, error) {
	out := make([]SessionInfo, 0, len(rows))
	for id, row := range rows {
		s, err := decodeRow(id, row)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	// Sorted through pointers: swapping rows would move each one many times.
	order := make([]*SessionInfo, len(out))
	for i := range out {
		order[i] = &out[i]
	}
	slices.SortFunc(order, func(a, b *SessionInfo) int {
		return cmp.Or(cmp.Compare(a.Created, b.Created), strings.Compare(a.ID, b.ID))
	})
	sorted := make([]SessionInfo, len(out))
	for i, s := range order {
		sorted[i] = *s
	}
	return sorted, nil
}

// Index is the session index held in memory, folded one event at a time.
type Index struct{ fold *eventlog.Fold }

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{fold: eventlog.NewFold(func(string) ([]byte, error) { return nil, nil })}
}

// Apply folds the next event of the log, in position order, into x.
func (x *Index) Apply(ev eventlog.Event) error { return x.fold.Apply(SessionIndex, ev) }

// Sessions returns the rows ordered by creation time, then id. A deleted
// session has no row.
func (x *Index) Sessions() ([]SessionInfo, error) {
	rows := map[string][]byte{}
	_ = x.fold.Changed(func(key string, value []byte) error {
		if value != nil {
			rows[key] = value
		}
		return nil
	})
	return Sessions(rows)
}
