package main

import (
	"context"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// completeIDs makes the shell complete session ids where a command takes
// a SESSION (its argument, or --session) and agent names where it takes
// --agent, from the store the command line names; the words a flag of a
// fixed set takes (--format, --role, --trigger, --permission, --event,
// end's --reason); and directories for --cwd. Sessions come from the
// session index, each with its title as the description, and agents from
// the names of their streams, so that completing reads no event even on a
// large store.
func completeIDs(a *app, root *cobra.Command) {
	for _, cmd := range root.Commands() {
		switch {
		case strings.Contains(cmd.Use, "SESSION..."):
			cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
				ids, directive := a.completeSessions(cmd, args, prefix)
				return slices.DeleteFunc(ids, func(id string) bool {
					id, _, _ = strings.Cut(id, "\t")
					return slices.Contains(args, id) // given already
				}), directive
			}
		case strings.Contains(cmd.Use, "SESSION"):
			cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return a.completeSessions(cmd, args, prefix)
			}
		}
		if cmd.Flags().Lookup("session") != nil {
			_ = cmd.RegisterFlagCompletionFunc("session", a.completeSessions)
		}
		if cmd.Flags().Lookup("agent") != nil {
			_ = cmd.RegisterFlagCompletionFunc("agent", a.completeAgents)
		}
		words := map[string][]string{"format": {formatText, "json", "claude"}, "role": {"user", "assistant"},
			"trigger": {"manual", "auto"}, "permission": {hookexec.Allow, hookexec.Deny, hookexec.Ask}}
		for _, ev := range schema.Events {
			words["event"] = append(words["event"], string(ev.Event))
		}
		if cmd.Name() == "end" {
			for _, r := range endReasons {
				words["reason"] = append(words["reason"], string(r))
			}
		}
		for flag, values := range words {
			if cmd.Flags().Lookup(flag) != nil {
				_ = cmd.RegisterFlagCompletionFunc(flag, func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
					var out []string
					for _, v := range values {
						if strings.HasPrefix(v, prefix) {
							out = append(out, v)
						}
					}
					return out, cobra.ShellCompDirectiveNoFileComp
				})
			}
		}
		if cmd.Flags().Lookup("cwd") != nil {
			_ = cmd.RegisterFlagCompletionFunc("cwd", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return nil, cobra.ShellCompDirectiveFilterDirs
			})
		}
	}
}

// completeSessions returns the ids of the sessions that begin with prefix,
// each with its title.
func (a *app) completeSessions(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	var out []string
	a.completeWith(cmd.Context(), func(ctx context.Context, e *reprise.Engine) error {
		sessions, err := e.Sessions(ctx)
		for _, s := range sessions {
			if strings.HasPrefix(s.ID, prefix) {
				out = append(out, completion(s.ID, s.Title))
			}
		}
		return err
	})
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeAgents returns the names of the agents that begin with prefix.
func (a *app) completeAgents(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	var out []string
	a.completeWith(cmd.Context(), func(ctx context.Context, e *reprise.Engine) error {
		return e.Store().Streams(ctx, projection.AgentStream(prefix), func(s eventlog.StreamInfo) error {
			if name := strings.TrimPrefix(s.Name, projection.AgentStream("")); strings.HasPrefix(name, prefix) {
				out = append(out, name)
			}
			return nil
		})
	})
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completion is one candidate, with its description when there is one.
func completion(value, description string) string {
	if description == "" {
		return value
	}
	return value + "\t" + description
}

// completeWith opens the store read-only, warnings discarded, and calls
// read with it. Whatever fails, completion offers what it found: none
// where there is no store.
func (a *app) completeWith(ctx context.Context, read func(context.Context, *reprise.Engine) error) {
	if ctx == nil {
		ctx = context.Background()
	}
	e, err := a.openReadOnly(ctx, io.Discard)
	if err != nil {
		return
	}
	defer e.Close()
	_ = read(ctx, e)
}
