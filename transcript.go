package reprise

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
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
// syncs append only the messages saved since, and rewrite it only if it was
// removed. s.mu must be held.
func (e *Engine) syncTranscript(s *session) (string, error) {
	path := e.TranscriptPath(s.conv.ID)
	if from := s.transcribed; from >= 0 {
		var err error
		if from == s.conv.Entries() {
			_, err = os.Stat(path)
		} else {
			err = e.writeTranscript(s, path, os.O_WRONLY|os.O_APPEND, from)
		}
		if err == nil {
			s.transcribed = s.conv.Entries()
			return path, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			s.transcribed = -1 // it may hold part of a line: rewrite it next time
			return path, fmt.Errorf("transcript of %s: %w", s.conv.ID, err)
		}
	}
	// A whole new file, renamed into place so that no hook reads half of it.
	if err := os.MkdirAll(e.transcriptDir, 0o700); err != nil {
		return path, fmt.Errorf("transcript of %s: %w", s.conv.ID, err)
	}
	tmp := path + ".tmp"
	if err := e.writeTranscript(s, tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0); err != nil {
		os.Remove(tmp)
		return path, fmt.Errorf("transcript of %s: %w", s.conv.ID, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return path, fmt.Errorf("transcript of %s: %w", s.conv.ID, err)
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
