package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// import --subagents reads a Claude Code session with its subagents, as
// 2.1.328 wrote it, and export --tree writes it back in the same layout,
// the subagent's transcript byte for byte.
func TestImportAndExportASessionWithSubagents(t *testing.T) {
	project, err := filepath.Abs(filepath.Join("..", "..", "testdata", "claudecode", "subagents", "single-fg", "projects", "-PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	mains, _ := filepath.Glob(filepath.Join(project, "*.jsonl"))
	subs, _ := filepath.Glob(filepath.Join(project, "*", "subagents", "agent-*.jsonl"))
	if len(mains) != 1 || len(subs) != 1 {
		t.Fatalf("fixture: %v %v", mains, subs)
	}
	out := c.ok("import", mains[0], "--subagents", "--id", "main", "--cwd", t.TempDir())
	if strings.Count(out, "imported ") != 2 || !strings.Contains(out, "imported main:") || !strings.Contains(out, "imported agent-a") {
		t.Fatalf("import --subagents printed %q", out)
	}
	c.fails(exitUsage, "import", "-", "--subagents")
	if list := c.ok("sessions"); !strings.Contains(list, "(subagent of main)") {
		t.Errorf("sessions lists no subagent of main:\n%s", list)
	}
	var listed []struct {
		ID         string `json:"id"`
		SubagentOf string `json:"subagent_of"`
	}
	c.okJSON(&listed, "sessions")
	if len(listed) != 2 || listed[0].SubagentOf+listed[1].SubagentOf != "main" {
		t.Errorf("sessions --json: %+v", listed)
	}
	dir := t.TempDir()
	out = c.ok("export", "main", "--tree", dir)
	files := strings.Fields(out)
	if len(files) != 3 || files[0] != filepath.Join(dir, "main.jsonl") {
		t.Fatalf("export --tree printed %q", out)
	}
	var exported string
	for _, f := range files {
		if strings.HasSuffix(f, ".jsonl") && strings.Contains(f, string(filepath.Separator)+"subagents"+string(filepath.Separator)) {
			exported = f
		}
	}
	got, err := os.ReadFile(exported)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(subs[0])
	if string(got) != string(want) {
		t.Errorf("the subagent's transcript %s differs from the one imported", exported)
	}
	if r := c.fails(exitFailure, "export", "main", "--tree", dir); !strings.Contains(r.stderr, "exists") {
		t.Errorf("an export over the last one: %s", r.stderr)
	}
	c.fails(exitUsage, "export", "main", "--tree", dir, "-o", filepath.Join(dir, "x"))
}
