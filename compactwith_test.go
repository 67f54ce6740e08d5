package reprise_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// A real PreCompact command hook's stdout is added to the compaction's
// instructions, and CompactWith hands them to the host's Summarizer, whose
// summary starts the compacted conversation; a Summarizer's error blocks
// the compaction.
func TestCompactWithHandsTheHooksInstructionsToTheSummarizer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	settings := testkit.WriteFile(t, filepath.Join(dir, "settings.json"), `{"hooks": {"PreCompact": [{"hooks": [
		{"type": "command", "command": "cat >/dev/null; printf '  keep the stack traces\\n\\n'"},
		{"type": "command", "command": "echo 'and the file names'"}]}]}}`)
	e, _ := asyncEngine(t, filepath.Join(dir, "reprise.db"), settings)
	testkit.Session(t, e, "s", "", "why does it crash?", "a nil map")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	var got string
	r, err := a.CompactWith(ctx, func(_ context.Context, instructions string) (string, error) {
		got = instructions
		return "The crash was a nil map.", nil
	}, reprise.WithInstructions("focus on the crash"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "focus on the crash\n\nkeep the stack traces\n\nand the file names"; got != want {
		t.Fatalf("the Summarizer got %q, want %q", got, want)
	}
	if r.Summary != "The crash was a nil map." || r.PreCompactInstructions != "keep the stack traces\n\nand the file names" {
		t.Fatalf("restore summary %q, instructions %q", r.Summary, r.PreCompactInstructions)
	}
	view, err := a.ModelView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(view) == 0 || !strings.HasSuffix(view[0].Content[0].Text, "The crash was a nil map.") {
		t.Fatalf("the compacted view starts %+v", view)
	}

	_, err = a.CompactWith(ctx, func(context.Context, string) (string, error) { return "", errors.New("the model is down") })
	if !errors.Is(err, reprise.ErrCompactionBlocked) || !strings.Contains(err.Error(), "the model is down") {
		t.Fatalf("a failing Summarizer: %v", err)
	}
}
