package bench

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"
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

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails: it panics instead
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
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
