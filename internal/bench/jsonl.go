package bench

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/reprise-dev/reprise/internal/uuid"
)

// The JSONL peer is what a host keeps transcripts in when it has no
// session store: one file per session, one JSON line per message, opened
// with O_APPEND and fsynced after each durable append. The peer rows
// measure it beside reprise, in the same rounds, with the same message
// texts.

// peerMessage is one line of a peer file: what a host needs of a message
// to show and resume a conversation.
type peerMessage struct {
	UUID      string    `json:"uuid"`
	Role      string    `json:"role"`
	Text      string    `json:"text"`
	SessionID string    `json:"sessionId"`
	Timestamp time.Time `json:"timestamp"`
}

// newPeerMessage returns the i-th message of a peer conversation: the
// role and text of message(i), a fresh uuid and the current time.
func newPeerMessage(session string, i int) peerMessage {
	m := message(i)
	return peerMessage{UUID: newUUID(), Role: m.Role, Text: m.Content[0].Text, SessionID: session, Timestamp: time.Now().UTC()}
}

// newUUID returns a random (version 4) UUID, its bytes read from the
// system's generator each time, as a host writing JSONL does.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails: it panics instead
	return uuid.V4(b)
}

// peerFile is one session's transcript file, open for appending.
type peerFile struct {
	f       *os.File
	session string
	buf     []byte
}

// createPeerFile opens path for appending, creating it if need be, for
// the messages of session.
func createPeerFile(path, session string) (*peerFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("peer file: %w", err)
	}
	return &peerFile{f: f, session: session}, nil
}

// appendLine encodes m as one line at the end of p.buf.
func (p *peerFile) appendLine(m peerMessage) error {
	line, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("peer message: %w", err)
	}
	p.buf = append(append(p.buf, line...), '\n')
	return nil
}

// Append writes m as one line and fsyncs the file: one durable append.
func (p *peerFile) Append(m peerMessage) error {
	p.buf = p.buf[:0]
	if err := p.appendLine(m); err != nil {
		return err
	}
	return p.flush()
}

// WriteAll writes msgs as lines in one write and fsyncs the file once: a
// save of buffered messages.
func (p *peerFile) WriteAll(msgs []peerMessage) error {
	p.buf = p.buf[:0]
	for _, m := range msgs {
		if err := p.appendLine(m); err != nil {
			return err
		}
	}
	return p.flush()
}

// flush writes p.buf and fsyncs the file.
func (p *peerFile) flush() error {
	if _, err := p.f.Write(p.buf); err != nil {
		return fmt.Errorf("peer write: %w", err)
	}
	if err := p.f.Sync(); err != nil {
		return fmt.Errorf("peer fsync: %w", err)
	}
	return nil
}

func (p *peerFile) Close() error { return p.f.Close() }

// readPeer opens the peer file at path and decodes every line, as a host
// resuming the conversation in a fresh process does.
func readPeer(path string) ([]peerMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("peer file: %w", err)
	}
	defer f.Close()
	var msgs []peerMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		var m peerMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("peer line %d: %w", len(msgs)+1, err)
		}
		msgs = append(msgs, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("peer file: %w", err)
	}
	return msgs, nil
}

// peerMessages returns n messages of session, as newPeerMessage makes them.
func peerMessages(session string, n int) []peerMessage {
	msgs := make([]peerMessage, n)
	for i := range msgs {
		msgs[i] = newPeerMessage(session, i)
	}
	return msgs
}

// peerLineSize returns the length of a peer file's line for a message of
// session, newline included: the mean of a user's and an assistant's.
func peerLineSize(session string) int {
	size := 0
	for i := range 2 {
		line, err := json.Marshal(newPeerMessage(session, i))
		if err != nil {
			return 0
		}
		size += len(line) + 1
	}
	return size / 2
}

// The Claude Code-shaped peer writes what Claude Code writes per message:
// the parent's uuid (null for the first), isSidechain, the role as type,
// the message as content blocks, a fresh UUID v4, an RFC 3339 timestamp
// with nanoseconds and the session id, each made when the line is written
// and encoded with encoding/json, as a host that keeps Claude Code's
// transcripts does.

// ccLine is one line of a Claude Code-shaped peer file.
type ccLine struct {
	ParentUUID  *string   `json:"parentUuid"`
	IsSidechain bool      `json:"isSidechain"`
	Type        string    `json:"type"`
	Message     ccMessage `json:"message"`
	UUID        string    `json:"uuid"`
	Timestamp   string    `json:"timestamp"`
	SessionID   string    `json:"sessionId"`
}

type ccMessage struct {
	Role    string    `json:"role"`
	Content []ccBlock `json:"content"`
}

type ccBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ccPeer is one session's Claude Code-shaped transcript file, open for
// appending through a bufio.Writer of the default size.
type ccPeer struct {
	f       *os.File
	w       *bufio.Writer
	session string
	parent  string // the last line's uuid; "" before the first
}

func createCCPeer(path, session string) (*ccPeer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("peer file: %w", err)
	}
	return &ccPeer{f: f, w: bufio.NewWriter(f), session: session}, nil
}

// write makes the line of message(i) and writes it to the buffer.
func (p *ccPeer) write(i int) error {
	m := message(i)
	line := ccLine{Type: m.Role, Message: ccMessage{Role: m.Role, Content: []ccBlock{{Type: "text", Text: m.Content[0].Text}}},
		UUID: newUUID(), Timestamp: time.Now().UTC().Format(time.RFC3339Nano), SessionID: p.session}
	if p.parent != "" {
		parent := p.parent
		line.ParentUUID = &parent
	}
	data, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("peer line: %w", err)
	}
	p.w.Write(data)
	if err := p.w.WriteByte('\n'); err != nil {
		return fmt.Errorf("peer write: %w", err)
	}
	p.parent = line.UUID
	return nil
}

// sync writes what is buffered and fsyncs the file.
func (p *ccPeer) sync() error {
	if err := p.w.Flush(); err != nil {
		return fmt.Errorf("peer write: %w", err)
	}
	if err := p.f.Sync(); err != nil {
		return fmt.Errorf("peer fsync: %w", err)
	}
	return nil
}

// Append writes the line of message(i) and fsyncs: one durable append.
func (p *ccPeer) Append(i int) error {
	if err := p.write(i); err != nil {
		return err
	}
	return p.sync()
}

// WriteAll writes the lines of messages 0 to n-1 and fsyncs once.
func (p *ccPeer) WriteAll(n int) error {
	for i := range n {
		if err := p.write(i); err != nil {
			return err
		}
	}
	return p.sync()
}

func (p *ccPeer) Close() error { return p.f.Close() }
