package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/turn"
)

// Bounds of the tools, so that one call cannot flood the conversation or
// the disk, nor run for ever.
const (
	bashDefaultTimeout = 2 * time.Minute
	bashMaxTimeout     = 10 * time.Minute
	bashMaxOutput      = 30000     // bytes kept of stdout, and of stderr
	readMaxBytes       = 256 << 10 // the largest file Read reads
	readDefaultLines   = 2000
	writeMaxBytes      = 1 << 20 // the largest content Write writes
)

// toolDefinitions are the tools offered to the model, with Claude Code's
// names and input fields, so that hooks and permission rules written for
// Claude Code's tools apply to them.
func toolDefinitions() []anthropic.ToolUnionParam {
	tool := func(name, description string, props map[string]any, required ...string) anthropic.ToolUnionParam {
		return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name:        name,
			Description: anthropic.String(description),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: props, Required: required},
		}}
	}
	str := func(d string) map[string]any { return map[string]any{"type": "string", "description": d} }
	num := func(d string) map[string]any { return map[string]any{"type": "integer", "description": d} }
	return []anthropic.ToolUnionParam{
		tool("Bash", "Runs a shell command with /bin/sh in the project directory and returns its stdout and stderr. "+
			"A command that exits non-zero is an error.",
			map[string]any{
				"command":     str("The command to run."),
				"timeout":     num("How long it may run, in milliseconds (default 120000, at most 600000)."),
				"description": str("What the command does, in a few words."),
			}, "command"),
		tool("Read", "Reads a text file, at most 256 KiB, and returns its lines.",
			map[string]any{
				"file_path": str("The file's path, absolute or relative to the project directory."),
				"offset":    num("The first line to return, from 1."),
				"limit":     num("How many lines to return (default 2000)."),
			}, "file_path"),
		tool("Write", "Writes a file, replacing it if it exists and making its directory if needed.",
			map[string]any{
				"file_path": str("The file's path, absolute or relative to the project directory."),
				"content":   str("What the file is to hold."),
			}, "file_path", "content"),
		tool(turn.AgentTool, "Hands a task to a subagent, which works on it with its own conversation and tools and "+
			"answers with a report, returned as this call's result. Several calls in one answer may run at once. "+
			"Subagent types: "+subagentTypeList()+".",
			map[string]any{
				"description":   str("The task in three to five words."),
				"prompt":        str("Everything the subagent needs to know to do the task: it sees nothing else of this conversation."),
				"subagent_type": str("The type of subagent to hand the task to (default " + reprise.DefaultSubagentType + ")."),
			}, "description", "prompt"),
	}
}

// subagentType is a type of subagent the Agent tool may start: the tools
// it may call besides the Agent tool (which every subagent has, so that it
// may start subagents of its own down to reprise's nesting limit) and what
// its system prompt says of it.
type subagentType struct {
	tools  []string
	system string
}

// subagentTypes are the subagent types of the Agent tool, by name.
var subagentTypes = map[string]subagentType{
	reprise.DefaultSubagentType: {
		tools: []string{"Bash", "Read", "Write"},
		system: "You are a subagent of a coding agent: it handed you the task in the user message. " +
			"Do it with the tools you have, in the project directory, fully but without going beyond it. " +
			"Then answer with a short report of what you did and found: your last message is all the agent " +
			"that called you will see of your work.",
	},
}

// subagentTypeList names the subagent types and their tools, for the
// Agent tool's description.
func subagentTypeList() string {
	var list []string
	for _, name := range slices.Sorted(maps.Keys(subagentTypes)) {
		list = append(list, name+" (tools: "+strings.Join(subagentTypes[name].tools, ", ")+")")
	}
	return strings.Join(list, "; ")
}

// subagentToolDefinitions are the tools offered to a subagent of typ: its
// type's tools and the Agent tool, nothing else left out.
func subagentToolDefinitions(typ subagentType) []anthropic.ToolUnionParam {
	var defs []anthropic.ToolUnionParam
	for _, d := range toolDefinitions() {
		if name := d.OfTool.Name; name == turn.AgentTool || slices.Contains(typ.tools, name) {
			defs = append(defs, d)
		}
	}
	return defs
}

// toolError is a tool's failure, as the model is told it.
type toolError struct {
	msg         string
	interrupted bool // it was stopped (the agent was interrupted)
}

func (e *toolError) Error() string { return e.msg }

// runTool runs the tool call name with input in the project directory
// cwd, and returns its tool_response in Claude Code's shape, or a
// *toolError.
func runTool(ctx context.Context, name string, input json.RawMessage, cwd string) (json.RawMessage, error) {
	var out any
	var err error
	switch name {
	case "Bash":
		out, err = runBash(ctx, input, cwd)
	case "Read":
		out, err = runRead(input, cwd)
	case "Write":
		out, err = runWrite(input, cwd)
	default:
		err = &toolError{msg: fmt.Sprintf("No such tool available: %s", name)}
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// bashResponse is Bash's tool_response, as Claude Code gives it to
// PostToolUse hooks.
type bashResponse struct {
	Stdout           string `json:"stdout"`
	Stderr           string `json:"stderr"`
	Interrupted      bool   `json:"interrupted"`
	IsImage          bool   `json:"isImage"`
	NoOutputExpected bool   `json:"noOutputExpected"`
}

// runBash runs input's command with /bin/sh -c in cwd, in a process group
// of its own that is killed whole when the timeout passes or ctx ends.
func runBash(ctx context.Context, input json.RawMessage, cwd string) (bashResponse, error) {
	var in struct {
		Command string `json:"command"`
		Timeout int64  `json:"timeout"` // milliseconds
	}
	if err := json.Unmarshal(input, &in); err != nil || strings.TrimSpace(in.Command) == "" {
		return bashResponse{}, &toolError{msg: "Bash needs a command"}
	}
	timeout := bashDefaultTimeout
	if in.Timeout > 0 {
		timeout = min(time.Duration(in.Timeout)*time.Millisecond, bashMaxTimeout)
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "/bin/sh", "-c", in.Command)
	cmd.Dir = cwd
	inOwnGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	stdout, stderr := &cappedBuffer{max: bashMaxOutput}, &cappedBuffer{max: bashMaxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	resp := bashResponse{Stdout: stdout.String(), Stderr: stderr.String()}
	output := strings.TrimSpace(strings.TrimSpace(resp.Stdout) + "\n" + strings.TrimSpace(resp.Stderr))
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return resp, &toolError{msg: "Interrupted\n" + output, interrupted: true}
	case runCtx.Err() != nil:
		return resp, &toolError{msg: fmt.Sprintf("Command timed out after %s\n%s", timeout, output)}
	case errors.As(err, &exit):
		return resp, &toolError{msg: fmt.Sprintf("Exit code %d\n%s", exit.ExitCode(), output)}
	case err != nil:
		return resp, &toolError{msg: err.Error()}
	}
	return resp, nil
}

// cappedBuffer keeps the first max bytes written to it, and says so when
// it dropped the rest.
type cappedBuffer struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.max - b.buf.Len(); room < n {
		keep := max(room, 0)
		b.dropped += n - keep
		p = p[:keep]
	}
	b.buf.Write(p)
	return n, nil
}

// String returns what was kept, a character cut in two at the cap left
// out, and says how much was dropped.
func (b *cappedBuffer) String() string {
	s := strings.ToValidUTF8(b.buf.String(), "")
	if b.dropped > 0 {
		return fmt.Sprintf("%s\n... [%d bytes of output left out]", s, b.dropped)
	}
	return s
}

// readResponse is Read's tool_response, as Claude Code gives it to
// PostToolUse hooks for a text file.
type readResponse struct {
	Type string `json:"type"`
	File struct {
		FilePath   string `json:"filePath"`
		Content    string `json:"content"`
		NumLines   int    `json:"numLines"`
		StartLine  int    `json:"startLine"`
		TotalLines int    `json:"totalLines"`
	} `json:"file"`
}

// runRead reads lines of a regular file of at most readMaxBytes.
func runRead(input json.RawMessage, cwd string) (readResponse, error) {
	var in struct {
		Path   string `json:"file_path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	if err := json.Unmarshal(input, &in); err != nil || in.Path == "" {
		return readResponse{}, &toolError{msg: "Read needs a file_path"}
	}
	path := resolve(in.Path, cwd)
	f, err := os.Open(path)
	if err != nil {
		return readResponse{}, &toolError{msg: err.Error()}
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return readResponse{}, &toolError{msg: err.Error()}
	}
	if !info.Mode().IsRegular() {
		return readResponse{}, &toolError{msg: path + " is not a regular file"}
	}
	if info.Size() > readMaxBytes {
		return readResponse{}, &toolError{msg: fmt.Sprintf("%s is %d bytes, more than the %d Read reads", path, info.Size(), readMaxBytes)}
	}
	data, err := io.ReadAll(io.LimitReader(f, readMaxBytes))
	if err != nil {
		return readResponse{}, &toolError{msg: err.Error()}
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	start := max(in.Offset, 1)
	limit := in.Limit
	if limit <= 0 {
		limit = readDefaultLines
	}
	from := min(start-1, len(lines))
	to := min(from+limit, len(lines))
	var r readResponse
	r.Type = "text"
	r.File.FilePath, r.File.Content = path, strings.Join(lines[from:to], "")
	r.File.NumLines, r.File.StartLine, r.File.TotalLines = to-from, start, len(lines)
	return r, nil
}

// writeResponse is Write's tool_response, as Claude Code gives it to
// PostToolUse hooks: "create" for a new file, "update" for one replaced.
type writeResponse struct {
	Type     string `json:"type"`
	FilePath string `json:"filePath"`
	Content  string `json:"content"`
}

// runWrite writes a file of at most writeMaxBytes, never over something
// that is not a regular file.
func runWrite(input json.RawMessage, cwd string) (writeResponse, error) {
	var in struct {
		Path    string  `json:"file_path"`
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(input, &in); err != nil || in.Path == "" || in.Content == nil {
		return writeResponse{}, &toolError{msg: "Write needs a file_path and a content"}
	}
	if len(*in.Content) > writeMaxBytes {
		return writeResponse{}, &toolError{msg: fmt.Sprintf("the content is more than the %d bytes Write writes", writeMaxBytes)}
	}
	path := resolve(in.Path, cwd)
	kind := "create"
	if info, err := os.Lstat(path); err == nil {
		if !info.Mode().IsRegular() {
			return writeResponse{}, &toolError{msg: path + " is not a regular file"}
		}
		kind = "update"
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return writeResponse{}, &toolError{msg: err.Error()}
	}
	if err := os.WriteFile(path, []byte(*in.Content), 0o644); err != nil {
		return writeResponse{}, &toolError{msg: err.Error()}
	}
	return writeResponse{Type: kind, FilePath: path, Content: *in.Content}, nil
}
