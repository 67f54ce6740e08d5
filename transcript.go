package reprise

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// TranscriptPath returns where the Engine keeps session id's transcript in
// Claude Code's JSONL format: the file hooks receive as transcript_path.
func (e *Engine) TranscriptPath(id string) string {
	return filepath.Join(e.transcriptDir, id+".jsonl")
}

// syncTranscript brings s's transcript file up to date with its saved
// messages and returns its path. The first sync in an Engine rewrites the
// file, since one left by an earlier process may not match the log; later
// syncs append only the messages saved since. s.mu must be held.
func (e *Engine) syncTranscript(s *session) (string, error) {
	path := e.TranscriptPath(s.conv.ID)
	if s.transcribed > 0 {
		if _, err := os.Stat(path); err != nil {
			s.transcribed = -1 // removed behind our back: rewrite
		}
	}
	if err := os.MkdirAll(e.transcriptDir, 0o700); err != nil {
		return path, fmt.Errorf("transcript of %s: %w", s.conv.ID, err)
	}
	from, flags, target := s.transcribed, os.O_WRONLY|os.O_APPEND, path
	if from < 0 {
		from, flags, target = 0, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, path+".tmp"
	}
	if err := e.writeTranscript(s, target, flags, from); err != nil {
		return path, fmt.Errorf("transcript of %s: %w", s.conv.ID, err)
	}
	if target != path {
		if err := os.Rename(target, path); err != nil {
			return path, fmt.Errorf("transcript of %s: %w", s.conv.ID, err)
		}
	}
	s.transcribed = s.conv.Entries()
	return path, nil
}

// writeTranscript writes s's transcript lines from entry from on.
func (e *Engine) writeTranscript(s *session, path string, flags, from int) error {
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	err = s.conv.Transcript(from, func(line []byte) error {
		_, err := w.Write(line)
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
