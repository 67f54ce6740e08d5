package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func input(t *testing.T, v map[string]any) json.RawMessage {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestBash(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	out, err := runTool(ctx, "Bash", input(t, map[string]any{"command": "pwd; echo oops >&2"}), dir)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(bashResponse{Stdout: dir + "\n", Stderr: "oops\n"})
	if !bytes.Equal(out, want) {
		t.Errorf("response %s, want %s", out, want)
	}

	_, err = runTool(ctx, "Bash", input(t, map[string]any{"command": "echo before; exit 3"}), dir)
	var te *toolError
	if !errors.As(err, &te) || te.msg != "Exit code 3\nbefore" {
		t.Errorf("a failing command: %v", err)
	}

	// The timeout kills the whole process group, the shell's children too.
	began := time.Now()
	_, err = runTool(ctx, "Bash", input(t, map[string]any{"command": "sleep 30 & sleep 30; wait", "timeout": 200}), dir)
	if !errors.As(err, &te) || !strings.HasPrefix(te.msg, "Command timed out after 200ms") || time.Since(began) > 10*time.Second {
		t.Errorf("a command past its timeout: %v after %s", err, time.Since(began))
	}

	out, err = runTool(ctx, "Bash", input(t, map[string]any{"command": "head -c 100000 /dev/zero | tr '\\0' a"}), dir)
	var resp bashResponse
	if err != nil || json.Unmarshal(out, &resp) != nil {
		t.Fatalf("a long output: %v", err)
	}
	if !strings.HasPrefix(resp.Stdout, strings.Repeat("a", bashMaxOutput)+"\n... [70000 bytes of output left out]") {
		t.Errorf("a long output is kept as %d bytes: %.80q", len(resp.Stdout), resp.Stdout)
	}
}

func TestReadAndWrite(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	out, err := runTool(ctx, "Write", input(t, map[string]any{"file_path": "a/b.txt", "content": "one\ntwo\nthree\n"}), dir)
	if err != nil || string(out) != `{"type":"create","filePath":"`+filepath.Join(dir, "a", "b.txt")+`","content":"one\ntwo\nthree\n"}` {
		t.Fatalf("write: %s, %v", out, err)
	}
	out, err = runTool(ctx, "Write", input(t, map[string]any{"file_path": filepath.Join(dir, "a", "b.txt"), "content": "one\ntwo\nthree\n"}), dir)
	if err != nil || !strings.HasPrefix(string(out), `{"type":"update"`) {
		t.Errorf("second write: %s, %v", out, err)
	}
	out, err = runTool(ctx, "Read", input(t, map[string]any{"file_path": "a/b.txt", "offset": 2, "limit": 1}), dir)
	var r readResponse
	if err != nil || json.Unmarshal(out, &r) != nil {
		t.Fatalf("read: %s, %v", out, err)
	}
	if r.Type != "text" || r.File.Content != "two\n" || r.File.NumLines != 1 || r.File.StartLine != 2 || r.File.TotalLines != 3 {
		t.Errorf("read: %+v", r)
	}

	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, readMaxBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]map[string]any{
		"read a directory":   {"file_path": "a"},
		"read a large file":  {"file_path": "big"},
		"read nothing":       {"file_path": "missing"},
		"write on a dir":     {"file_path": "a", "content": "x"},
		"write no content":   {"file_path": "c.txt"},
		"write a large file": {"file_path": "c.txt", "content": strings.Repeat("x", writeMaxBytes+1)},
	} {
		tool := "Read"
		if strings.HasPrefix(name, "write") {
			tool = "Write"
		}
		var te *toolError
		if _, err := runTool(ctx, tool, input(t, in), dir); !errors.As(err, &te) {
			t.Errorf("%s: %v, want a tool error", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "c.txt")); err == nil {
		t.Error("a refused write wrote")
	}
}

// On a terminal the user answers the question; without one nobody is
// asked and the call is refused.
func TestConfirm(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		interactive bool
		answer      string
		want        string
	}{
		{true, "y", ""},
		{true, " Yes ", ""},
		{true, "n", refusedByUser},
		{true, "", refusedByUser},
		{false, "y", noTerminal("Bash")},
	} {
		lines := make(chan string, 1)
		lines <- c.answer
		var errw bytes.Buffer
		h := &host{errw: &errw, lines: lines, interactive: c.interactive}
		if got := h.confirm(ctx, "Bash", json.RawMessage(`{"command":"ls"}`), ""); got != c.want {
			t.Errorf("%+v: %q", c, got)
		}
		if asked := strings.Contains(errw.String(), `Allow Bash {"command":"ls"}? [y/N]`); asked != c.interactive {
			t.Errorf("%+v: asked %v: %q", c, asked, errw.String())
		}
	}
	// The end of input is a no.
	lines := make(chan string)
	close(lines)
	h := &host{errw: &bytes.Buffer{}, lines: lines, interactive: true}
	if got := h.confirm(ctx, "Bash", nil, ""); got != refusedByUser {
		t.Errorf("at the end of input: %q", got)
	}
}
