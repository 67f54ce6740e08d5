package reprise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
)

// FuzzImport feeds arbitrary bytes to the Claude Code transcript importer,
// leniently and strictly, on an in-memory Engine. It must never panic or
// hang. Input without a transcript record (a JSON object line with a
// "type") fails with ErrNotTranscript and records nothing. Otherwise a lenient import succeeds, and a strict one
// fails with ErrBadTranscript exactly when a non-blank line is not a JSON
// object. Every line kept comes back from Export byte for byte and in order, and
// the store passes Audit. The seed corpus is testdata/transcripts plus
// testdata/fuzz/FuzzImport.
func FuzzImport(f *testing.F) {
	paths, err := filepath.Glob("testdata/transcripts/*.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, false)
		f.Add(data, true)
	}
	logger := slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, data []byte, strict bool) {
		ctx := context.Background()
		e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Logger: logger, TranscriptDir: filepath.Join(os.TempDir(), "reprise-fuzz-unused")})
		defer e.Close()
		rep, err := e.Import(ctx, bytes.NewReader(data), reprise.ImportOptions{ID: "fuzz", Strict: strict})
		kept, blank, bad := transcriptLines(data)
		switch {
		case !typed(kept) && (!strict || bad == 0):
			if !errors.Is(err, reprise.ErrNotTranscript) {
				t.Fatalf("Import of input without a transcript record: err = %v, want ErrNotTranscript", err)
			}
			if head, err := e.Store().Head(ctx, "session/fuzz"); err != nil || head != 0 {
				t.Fatalf("Import of input without a transcript record recorded %d events (%v)", head, err)
			}
			return
		case err != nil && !strict:
			t.Fatalf("lenient Import failed: %v", err)
		case err != nil && !errors.Is(err, reprise.ErrBadTranscript):
			t.Fatalf("strict Import failed with %v, not ErrBadTranscript", err)
		case err != nil && bad == 0:
			t.Fatalf("strict Import failed with %v, but every line is a JSON object", err)
		case err != nil:
			return
		case strict && bad > 0:
			t.Fatalf("strict Import accepted %d lines that are not JSON objects", bad)
		case rep.SkippedTotal != bad || len(rep.Skipped) != min(bad, 1000):
			t.Fatalf("Import skipped %d lines (%d listed), want %d", rep.SkippedTotal, len(rep.Skipped), bad)
		case rep.Messages+rep.Records != len(kept):
			t.Fatalf("Import kept %d messages and %d records of %d lines (%d blank)", rep.Messages, rep.Records, len(kept), blank)
		}
		var out bytes.Buffer
		if err := e.Export(ctx, "fuzz", &out); err != nil {
			t.Fatalf("Export: %v", err)
		}
		if want := append(bytes.Join(kept, []byte("\n")), '\n'); len(kept) > 0 && !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("Export wrote\n%q\nwant the kept lines\n%q", out.Bytes(), want)
		}
		msgs, err := e.FullConversation(ctx, "fuzz")
		if err != nil || len(msgs) != rep.Messages {
			t.Fatalf("the imported session has %d messages (%v), the report says %d", len(msgs), err, rep.Messages)
		}
		audit, err := reprise.Audit(ctx, e.Store())
		if err != nil || len(audit.Violations) > 0 {
			t.Fatalf("Audit after Import: %v %v", err, audit.Violations)
		}
	})
}

// transcriptLines splits a transcript as Import reads it: at newlines,
// keeping carriage returns. It returns the lines that are JSON objects and
// counts the blank ones and the others.
func transcriptLines(data []byte) (kept [][]byte, blank, bad int) {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for _, line := range lines {
		trimmed := bytes.TrimSpace(line)
		switch {
		case len(bytes.Trim(line, " \t\r")) == 0:
			blank++
		case !jsonObject(trimmed):
			bad++
		default:
			kept = append(kept, line)
		}
	}
	return kept, blank, bad
}

// typed reports whether one of the JSON objects lines has a non-empty
// string "type": a transcript record.
func typed(lines [][]byte) bool {
	for _, line := range lines {
		var rec struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Type != "" {
			return true
		}
	}
	return false
}

// jsonObject reports whether b is one JSON object.
func jsonObject(b []byte) bool { return len(b) > 0 && b[0] == '{' && json.Valid(b) }
