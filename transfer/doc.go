// Package transfer moves Claude Code transcripts (JSONL, one record a
// line) in and out of a log: Import reads one into a new session, keeping
// every record it does not turn into a message verbatim at its place, and
// Export writes a session back as the same lines.
//
// # Usage
//
//	rep, err := transfer.Import(ctx, store, now, file, transfer.ImportOptions{ID: "s1", Cwd: "/src/app"})
//	// rep.Messages, rep.Records, rep.Skipped: what became of the lines
//	err = transfer.Export(ctx, store, "s1", os.Stdout)
//
// Package reprise's Engine.Import and Engine.Export forward to these, with
// the Engine's store, clock and ids; ImportOptions, ImportReport and the
// errors are forwarded by the same names.
//
// # Caveats
//
// Import takes opts.ID and opts.Cwd as they are: the caller checks the id
// (Engine.Import uses ValidateID and fills an empty one) and makes the
// directory absolute. It writes to the store directly: a process that
// caches the session (an Engine that read it before a resumed import)
// does not see the records until it reads the stream again.
//
// Memory stays bounded whatever the size of the input: records are
// appended in batches of at most 1000 records or 4 MB, and a line longer
// than MaxTranscriptLine is read past without being held. An import is
// therefore several appends: it records its start with the first batch
// and its end with the last, so that one cut short is seen as unfinished
// (lifecycle.ErrImportUnfinished) and can be resumed, never taken for a
// whole session.
//
// The transcript's cwd is never taken as the session's: whoever wrote the
// file would choose which project hooks run. It is kept as
// SessionInfo.ImportedCwd.
package transfer
