package reprise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// A Claude Code session with subagents, as 2.1.328 wrote it, imports into
// the same tree (each subagent linked to the Agent call that started it),
// and exports back in Claude Code's layout, byte for byte; the export
// imports again into the same tree.
func TestASessionWithSubagentsImportsAndExportsAsATree(t *testing.T) {
	ctx := context.Background()
	for _, run := range []string{"single-fg", "parallel-fg"} {
		t.Run(run, func(t *testing.T) {
			project := filepath.Join("testdata", "claudecode", "subagents", run, "projects", "-PROJECT")
			mains, _ := filepath.Glob(filepath.Join(project, "*.jsonl"))
			if len(mains) != 1 {
				t.Fatalf("the fixture %s has %d main transcripts", project, len(mains))
			}
			originals, _ := filepath.Glob(filepath.Join(project, "*", "subagents", "agent-*.jsonl"))
			e, _ := testkit.NewEngine(t, reprise.Options{Logger: testkit.Discard})
			reports, err := e.ImportTree(ctx, mains[0], reprise.ImportOptions{ID: "main", Cwd: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if len(reports) != 1+len(originals) || len(originals) == 0 {
				t.Fatalf("imported %d transcripts; the fixture has 1 and %d subagents", len(reports), len(originals))
			}
			subs, err := e.Subagents(ctx, "main")
			if err != nil || len(subs) != len(originals) {
				t.Fatalf("the tree: %+v, %v; want %d subagents", subs, err, len(originals))
			}
			for _, s := range subs {
				if s.Session.Subagent.Type != "general-purpose" || s.Session.Subagent.Depth != 1 || !s.Resulted {
					t.Errorf("subagent %+v", s.Session.Subagent)
				}
			}

			out := t.TempDir()
			paths, err := e.ExportTree(ctx, "main", out)
			if err != nil {
				t.Fatal(err)
			}
			if len(paths) != 1+2*len(originals) {
				t.Fatalf("exported %v", paths)
			}
			if !bytes.Equal(mustRead(t, paths[0]), mustRead(t, mains[0])) {
				t.Errorf("the main transcript is not exported as it was imported")
			}
			var got, want [][]byte
			for _, p := range originals {
				want = append(want, mustRead(t, p))
			}
			exported, _ := filepath.Glob(filepath.Join(out, "main", "subagents", "agent-*.jsonl"))
			for _, p := range exported {
				got = append(got, mustRead(t, p))
			}
			slices.SortFunc(got, bytes.Compare)
			slices.SortFunc(want, bytes.Compare)
			if !slices.EqualFunc(got, want, bytes.Equal) {
				t.Errorf("the subagents' transcripts are not exported as they were imported")
			}
			if _, err := e.ExportTree(ctx, "main", out); !os.IsExist(err) {
				t.Errorf("an export over an earlier one: %v; want it refused", err)
			}

			e2, _ := testkit.NewEngine(t, reprise.Options{Logger: testkit.Discard})
			if _, err := e2.ImportTree(ctx, paths[0], reprise.ImportOptions{ID: "again", Cwd: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			again, err := e2.Subagents(ctx, "again")
			if err != nil || len(again) != len(subs) {
				t.Fatalf("the export imported again: %+v, %v", again, err)
			}
			for i := range again {
				if again[i].Session.Subagent.ToolUseID != subs[i].Session.Subagent.ToolUseID || again[i].Session.Subagent.Description != subs[i].Session.Subagent.Description {
					t.Errorf("subagent %d: %+v, want %+v", i, again[i].Session.Subagent, subs[i].Session.Subagent)
				}
			}
		})
	}
}

// A nested tree exports and imports back whole: a subagent whose call is
// in another subagent's transcript is imported under it, one depth
// deeper, whatever order the files come in.
func TestANestedTreeImportsBackWhole(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	testkit.Session(t, e, "s", dir, "hello")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	var want []string // each subagent as its parent and call
	for depth := 1; depth <= 3; depth++ {
		call := fmt.Sprintf("toolu_%d", depth)
		if _, err := a.PreToolUse(ctx, reprise.ToolCall{ID: call, Name: "Agent", AddToolUse: true, Permission: hookexec.Allow,
			Input: json.RawMessage(`{"prompt": "go on"}`)}); err != nil {
			t.Fatal(err)
		}
		child, err := a.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: call, Prompt: "go on"})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%d %s", depth, call))
		a = child
	}
	paths, err := e.ExportTree(ctx, "s", filepath.Join(dir, "out"))
	if err != nil || len(paths) != 7 {
		t.Fatalf("exported %v, %v", paths, err)
	}
	e2, _ := testkit.NewEngine(t, reprise.Options{Logger: testkit.Discard})
	reports, err := e2.ImportTree(ctx, paths[0], reprise.ImportOptions{ID: "again", Cwd: dir})
	if err != nil || len(reports) != 4 {
		t.Fatalf("imported %+v, %v", reports, err)
	}
	var got []string
	for parent := "again"; ; {
		subs, err := e2.Subagents(ctx, parent)
		if err != nil {
			t.Fatal(err)
		}
		if len(subs) == 0 {
			break
		}
		if len(subs) != 1 {
			t.Fatalf("%s has subagents %+v, want one", parent, subs)
		}
		link := subs[0].Session.Subagent
		got = append(got, fmt.Sprintf("%d %s", link.Depth, link.ToolUseID))
		parent = subs[0].Session.ID
	}
	if !slices.Equal(got, want) {
		t.Errorf("the tree imported back: %v, want %v", got, want)
	}
}
