package transfer

import "errors"

// ErrBadTranscript is returned by Import in strict mode for a line that is
// not a JSON object, and for a line longer than MaxTranscriptLine.
var ErrBadTranscript = errors.New("reprise: bad transcript line")

// ErrNotTranscript is returned by Import for input that holds no transcript
// record, no line that is a JSON object with a "type": an empty file, a
// README, a binary, a JSON document. Nothing is recorded.
var ErrNotTranscript = errors.New("reprise: not a Claude Code transcript")
