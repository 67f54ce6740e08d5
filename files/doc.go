// Package files is the Engine's file layer: the files reprise keeps beside
// a log, each a plain name in one directory that only the user may enter.
// They are the transcripts hooks read (<session>.jsonl), the
// CLAUDE_ENV_FILE of each SessionStart run (<session>.env-<restore id>)
// and hook output too long to inject (<session>-hook-<id>.txt).
//
// # Usage
//
//	f := files.Dir("/home/me/.local/state/reprise/reprise.db.transcripts")
//	err := f.Replace("s1.jsonl", func(w io.Writer) error { ... })
//	data, err := f.Read("s1.env-r1") // at most MaxRead bytes
//
// Dir is the real one; NewMemory is its in-memory twin, which keeps the
// same contract (package reprise's TestFilesContract runs both); Temp is a
// private temporary directory removed on Close. Package reprise forwards
// them as DirFiles, NewMemoryFiles and the Files type. RemoveSession
// removes one session's files, as a vacuum does.
//
// # Caveats
//
// A directory is trusted only if it is the user's own: a symbolic link, one
// owned by another user, one that group or others may write, or one whose
// parents someone else could swap, is refused with ErrNotPrivate before
// anything is written. Files are opened without following links and
// without waiting on a FIFO; only regular files the user owns are written,
// read or replaced. Owners and modes are a Unix system's: elsewhere Dir
// refuses every directory.
package files
