package scenario

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/projection"
)

// session creates a session, in the scenario's directory unless cwd
// names one.
//
//	session a cwd=/src/app
func (w *World) session(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	_, err := w.e.CreateSession(ctx, w.arg(t, d, 0), cmp.Or(opt(d, "cwd"), w.cwd()))
	return nil, err
}

// append appends a message, durably; the input is its text.
//
//	append a user
//	first question
func (w *World) append(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	_, err := w.e.Append(ctx, w.arg(t, d, 0), w.message(t, d))
	return nil, err
}

// buffer buffers a message, saved by the next save or lifecycle step; the
// input is its text.
//
//	buffer a assistant meta=true
//	unsaved answer
func (w *World) buffer(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	_, err := w.e.Buffer(ctx, w.arg(t, d, 0), w.message(t, d))
	return nil, err
}

// message is the message of an append or buffer: its text, or with
// blocks=true its content blocks as JSON.
func (w *World) message(t *testing.T, d *datadriven.TestData) reprise.Message {
	m := reprise.Text(w.arg(t, d, 1), w.text(t, d))
	if opt(d, "blocks") == "true" {
		blocks, ok := projection.Content(json.RawMessage(d.Input))
		if !ok {
			t.Fatalf("%s: the input is not content blocks", d.Pos)
		}
		m.Content = blocks
	}
	m.IsMeta = opt(d, "meta") == "true"
	return m
}

// save saves a session's buffered messages and prints how many.
//
//	save a
func (w *World) save(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	n, err := w.e.Save(ctx, w.arg(t, d, 0))
	return printf("saved %d", n), err
}

// conversation prints a session's conversation as the model sees it, a
// line a message.
//
//	conversation b
func (w *World) conversation(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	msgs, err := w.e.Conversation(ctx, w.arg(t, d, 0))
	var out []string
	for _, m := range msgs {
		meta := ""
		if m.IsMeta {
			meta = " meta"
		}
		text := fmt.Sprintf("%q", projection.FirstText(m))
		if projection.FirstText(m) == "" && len(m.Content) > 0 {
			text = "[" + m.Content[0].Type + "]"
		}
		out = append(out, fmt.Sprintf("| %s%s %s", m.Role, meta, text))
	}
	return out, err
}

// transcript prints how many lines a session's transcript file holds, and
// its last line: a message's type and content, or an attachment's type,
// hook and content.
//
//	transcript a
func (w *World) transcript(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	data, err := w.files.Read(w.arg(t, d, 0) + ".jsonl")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var last struct {
		Type    string `json:"type"`
		IsMeta  bool   `json:"isMeta"`
		Message struct {
			Content any `json:"content"`
		} `json:"message"`
		Attachment struct {
			Type     string   `json:"type"`
			HookName string   `json:"hookName"`
			Content  []string `json:"content"`
		} `json:"attachment"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		return nil, err
	}
	if a := last.Attachment; last.Type == "attachment" {
		return printf("transcript: %d lines, the last an attachment %s %s %q", len(lines), a.Type, a.HookName,
			projection.Clip(strings.Join(a.Content, "\n"), 50)), nil
	}
	return printf("transcript: %d lines, the last %s meta=%v %q", len(lines), last.Type, last.IsMeta,
		projection.Clip(fmt.Sprint(last.Message.Content), 50)), nil
}

// delete deletes a session: its tombstone.
//
//	delete a
func (w *World) delete(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	return nil, w.e.DeleteSession(ctx, w.arg(t, d, 0))
}

// vacuum removes what the deleted sessions left and prints what went.
//
//	vacuum
func (w *World) vacuum(ctx context.Context, _ *testing.T, _ *datadriven.TestData) ([]string, error) {
	rep, err := w.e.Vacuum(ctx)
	return printf("vacuumed sessions=%s events=%d rewritten=%d files=%d",
		strings.Join(rep.Sessions, ","), rep.Events, rep.Rewritten, rep.Files), err
}

// audit audits the log and prints its violations.
//
//	audit
func (w *World) audit(ctx context.Context, _ *testing.T, _ *datadriven.TestData) ([]string, error) {
	rep, err := reprise.Audit(ctx, w.store)
	if err != nil {
		return nil, err
	}
	out := printf("audit: %d events, %d violations", rep.Events, len(rep.Violations))
	for _, v := range rep.Violations {
		out = append(out, "  "+v.String())
	}
	return out, nil
}
