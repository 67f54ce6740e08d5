package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// What the peer writes, by single appends and by a bulk write, its read
// decodes back whole and in order.
func TestPeerReadsWhatItWrote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	session := newUUID()
	p, err := createPeerFile(path, session)
	if err != nil {
		t.Fatal(err)
	}
	want := peerMessages(session, 5)
	for _, m := range want[:2] {
		if err := p.Append(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WriteAll(want[2:]); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	// A second opening appends after the first one's lines.
	p, err = createPeerFile(path, session)
	if err != nil {
		t.Fatal(err)
	}
	last := newPeerMessage(session, 5)
	last.Text = "a \"quoted\" line\nwith a newline, <markup> and ünicode"
	if err := p.Append(last); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	want = append(want, last)

	got, err := readPeer(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d messages, want %d: %+v", len(got), len(want), got)
	}
	for i, g := range got {
		w := want[i]
		if g.UUID != w.UUID || g.Role != w.Role || g.Text != w.Text || g.SessionID != w.SessionID || !g.Timestamp.Equal(w.Timestamp) {
			t.Errorf("message %d reads back as %+v, want %+v", i, g, w)
		}
	}
	if got[0].Role != "user" || got[1].Role != "assistant" || got[0].Text != benchText {
		t.Errorf("peer messages do not carry the bench's roles and text: %+v", got[:2])
	}
}

func TestPeerReadRejectsABrokenLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(`{"uuid":"a","role":"user"}`+"\n"+`{"uuid":`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if msgs, err := readPeer(path); err == nil {
		t.Errorf("a truncated line read as %+v", msgs)
	}
}

func TestPeerLineSize(t *testing.T) {
	m := newPeerMessage(newUUID(), 0)
	if m.Timestamp.Location() != time.UTC || len(m.UUID) != 36 || m.UUID[14] != '4' {
		t.Errorf("peer message %+v: want a UTC time and a version 4 UUID", m)
	}
	// The peer's lines are a little over 200 bytes: the bench's text with
	// an id, a session id, a role and a time.
	if n := peerLineSize(newUUID()); n < 200 || n > 300 {
		t.Errorf("peer lines of %d bytes, want about 200 to 300", n)
	}
}

func TestAlternateRotates(t *testing.T) {
	var order []int
	side := func(i int) func() error { return func() error { order = append(order, i); return nil } }
	n := 0
	firsts := map[int]bool{}
	for range 3 {
		order = order[:0]
		if err := alternate(&n, side(0), side(1), side(2)); err != nil {
			t.Fatal(err)
		}
		if len(order) != 3 {
			t.Fatalf("alternate ran %v, want each side once", order)
		}
		firsts[order[0]] = true
	}
	if len(firsts) != 3 {
		t.Errorf("three calls started with %v, want every side once", firsts)
	}
}
