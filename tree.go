package reprise

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// subagentMeta is a subagent's agent-<id>.meta.json, in the fields
// Claude Code 2.1.328 writes that reprise reads back.
type subagentMeta struct {
	AgentType   string `json:"agentType"`
	Description string `json:"description,omitempty"`
	ToolUseID   string `json:"toolUseId"`
	SpawnDepth  int    `json:"spawnDepth"`
}

// ExportTree writes session id and its subagents as Claude Code lays them
// out in a project's directory: dir/<id>.jsonl, and for every subagent
// (subagents' own among them) dir/<id>/subagents/agent-<agent_id>.jsonl
// beside agent-<agent_id>.meta.json. Files are made new (0600, in
// directories made 0700): one that exists already is an error, and
// nothing is written over. It returns the paths written.
func (e *Engine) ExportTree(ctx context.Context, id, dir string) ([]string, error) {
	if err := ValidateID(id); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSessionNotFound, err)
	}
	sub := filepath.Join(dir, id, "subagents")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		return nil, err
	}
	var paths []string
	write := func(path string, fill func(io.Writer) error) error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		paths = append(paths, path)
		bw := bufio.NewWriter(f)
		err = fill(bw)
		return errors.Join(err, bw.Flush(), f.Close())
	}
	if err := write(filepath.Join(dir, id+".jsonl"), func(w io.Writer) error { return e.Export(ctx, id, w) }); err != nil {
		return paths, err
	}
	subs, err := e.descendants(ctx, id)
	if err != nil {
		return paths, err
	}
	for _, s := range subs {
		link := s.Subagent
		base := filepath.Join(sub, "agent-"+link.AgentID)
		if err := write(base+".jsonl", func(w io.Writer) error { return e.Export(ctx, s.ID, w) }); err != nil {
			return paths, err
		}
		meta, _ := json.Marshal(subagentMeta{AgentType: link.Type, Description: link.Description, ToolUseID: link.ToolUseID,
			SpawnDepth: link.Depth}) // strings and an int always marshal
		if err := write(base+".meta.json", func(w io.Writer) error { _, err := w.Write(meta); return err }); err != nil {
			return paths, err
		}
	}
	return paths, nil
}

// ImportTree reads a Claude Code session with its subagents, laid out as
// ExportTree writes them (and as Claude Code keeps them): the transcript
// at path, and each subagent's beside its meta.json in the directory
// named after it, <path without .jsonl>/subagents. The session becomes
// opts.ID (a new one when empty), and each subagent a session linked to
// the Agent call that started it, found by the call's tool_use id in the
// session's transcript or in another subagent's: the same tree, under the
// ids StartSubagent gives. It returns the reports of the imports, the
// session's first.
func (e *Engine) ImportTree(ctx context.Context, path string, opts ImportOptions) ([]ImportReport, error) {
	main, err := e.importFile(ctx, path, opts)
	if err != nil {
		return []ImportReport{main}, err
	}
	reports := []ImportReport{main}
	dir := filepath.Join(strings.TrimSuffix(path, ".jsonl"), "subagents")
	metas, err := filepath.Glob(filepath.Join(dir, "agent-*.meta.json"))
	if err != nil {
		return reports, err
	}
	// A subagent's parent is the session that holds its call: import
	// those whose parent is in first, round by round.
	pending := map[string]subagentMeta{}
	for _, m := range metas {
		data, err := os.ReadFile(m)
		if err != nil {
			return reports, err
		}
		var meta subagentMeta
		if err := json.Unmarshal(data, &meta); err != nil || meta.ToolUseID == "" {
			return reports, fmt.Errorf("%w: %s: not a subagent's meta.json", ErrBadTranscript, m)
		}
		pending[strings.TrimSuffix(m, ".meta.json")+".jsonl"] = meta
	}
	calls := map[string]string{} // an Agent call's tool_use id -> the session that holds it
	note := func(session string) error {
		s, err := e.session(ctx, session)
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range projection.SubagentCalls(s.conv.Messages) {
			calls[c.ID] = session
		}
		return nil
	}
	if err := note(main.Session); err != nil {
		return reports, err
	}
	for len(pending) > 0 {
		progress := false
		for _, file := range slices.Sorted(maps.Keys(pending)) {
			meta := pending[file]
			parent, ok := calls[meta.ToolUseID]
			if !ok {
				continue
			}
			depth := 1
			if info, err := e.Session(ctx, parent); err == nil && info.Subagent != nil {
				depth = info.Subagent.Depth + 1
			}
			agentID := SubagentID(parent, meta.ToolUseID)
			sub := opts
			sub.ID, sub.Resume = SubagentSession(agentID), false
			sub.Subagent = &schema.Subagent{Session: parent, ToolUseID: meta.ToolUseID, AgentID: agentID,
				Type: cmp.Or(meta.AgentType, DefaultSubagentType), Description: meta.Description, Depth: depth}
			rep, err := e.importFile(ctx, file, sub)
			reports = append(reports, rep)
			if err == nil {
				err = note(rep.Session)
			}
			if err != nil {
				return reports, err
			}
			delete(pending, file)
			progress = true
		}
		if !progress {
			for _, file := range slices.Sorted(maps.Keys(pending)) {
				return reports, fmt.Errorf("%w: %s: no transcript holds its call %s", ErrBadTranscript, file, pending[file].ToolUseID)
			}
		}
	}
	return reports, nil
}

// importFile imports the transcript at path.
func (e *Engine) importFile(ctx context.Context, path string, opts ImportOptions) (ImportReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return ImportReport{Session: opts.ID}, err
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil {
		if !info.Mode().IsRegular() {
			return ImportReport{Session: opts.ID}, fmt.Errorf("%w: %s is not a regular file", ErrBadTranscript, path)
		}
		opts.Size = info.Size()
	}
	return e.Import(ctx, f, opts)
}
