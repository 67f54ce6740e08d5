package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/reprise-dev/reprise/jsonview"
	"github.com/spf13/cobra"
)

// agentsOptions are the options of agents: none of its own.
type agentsOptions struct{ cmdIO }

// agentJSON is one agent in the JSON output of agents.
type agentJSON = jsonview.Agent

// newAgentsCmd returns the agents command: list the agents.
func newAgentsCmd(a *app, runF func(context.Context, *agentsOptions) error) *cobra.Command {
	var o agentsOptions
	return &cobra.Command{
		Use:   "agents",
		Short: "List the agents of the store, their state and what they are doing",
		Long: `agents lists every agent host the log knows, by name: the state its
lifecycle is in, its current session, what it is doing now (a restore, a
prompt's or a Stop's hooks, a compaction, tool calls), how many restores it
finished, and when it last did anything. A step still in flight when its
process died shows as in progress: the next command on the agent, or
reprise finish, finishes it. It reads each agent's events, read-only.
With --json it prints one JSON array. Where there is no store yet, the
list is empty.`,
		Example: `  reprise agents
  reprise agents --json | jq -r '.[] | select(.in_progress) | .id'`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runAgents(cmd.Context(), &o)
		},
	}
}

// runAgents lists the agents of the store.
func runAgents(ctx context.Context, o *agentsOptions) (err error) {
	var agents []agentJSON
	e, err := o.openReadOnly(ctx, o.stderr)
	switch {
	case isNoStore(err):
		// No store yet: no agents either.
	case err != nil:
		return err
	default:
		defer closeEngine(e, &err)
		if agents, err = jsonview.ListAgents(ctx, e.Store()); err != nil {
			return err
		}
	}
	if o.json {
		return printJSON(o.stdout, append([]agentJSON{}, agents...))
	}
	tw := tabwriter.NewWriter(o.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSTATE\tSESSION\tNOW\tRESTORES\tLAST ACTIVE")
	for _, a := range agents {
		id := a.ID
		if a.SubagentOf != "" {
			id += " (subagent of " + a.SubagentOf + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", id, a.State, orDash(a.Session), a.Now, a.Restores, a.LastActive)
	}
	return tw.Flush()
}

// orDash returns s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
