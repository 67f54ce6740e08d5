package reprise

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// TranscriptPath returns where the Engine keeps session id's transcript in
// Claude Code's JSONL format: the file hooks receive as transcript_path.
func (e *Engine) TranscriptPath(id string) string { return e.files.Path(id + ".jsonl") }

// syncTranscript brings s's transcript file up to date with its saved
// messages and returns its path. The first sync in an Engine rewrites the
// file, since one left by an earlier process may not match the log; later
// syncs append only the messages saved since, and rewrite it only if it was
// removed. s.mu must be held.
func (e *Engine) syncTranscript(s *session) (string, error) {
	name := s.conv.ID + ".jsonl"
	path := e.files.Path(name)
	if from := s.transcribed; from >= 0 {
		err := e.files.Append(name, func(w io.Writer) error { return writeLines(w, s, from) })
		if err == nil {
			s.transcribed = s.conv.Entries()
			return path, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			s.transcribed = -1 // it may hold part of a line: rewrite it next time
			return path, fmt.Errorf("transcript of %s: %w", s.conv.ID, err)
		}
	}
	if err := e.files.Replace(name, func(w io.Writer) error { return writeLines(w, s, 0) }); err != nil {
		return path, fmt.Errorf("transcript of %s: %w", s.conv.ID, err)
	}
	s.transcribed = s.conv.Entries()
	return path, nil
}

// writeLines writes s's transcript lines from entry from on.
func writeLines(w io.Writer, s *session, from int) error {
	return s.conv.Transcript(from, func(line []byte) error {
		_, err := w.Write(line)
		return err
	})
}
