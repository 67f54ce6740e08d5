package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise/jsonview"
)

// finishOptions are the options of finish.
type finishOptions struct {
	cmdIO
	restoreOptions
}

// newFinishCmd returns the finish command: roll forward what an agent's
// log ends inside.
func newFinishCmd(a *app, runF func(context.Context, *finishOptions) error) *cobra.Command {
	var o finishOptions
	cmd := &cobra.Command{
		Use:   "finish --agent NAME",
		Short: "Finish a restore that an interrupted or crashed command left in progress",
		Long: `finish opens the agent and rolls forward the restore its log ends inside,
as every command on the agent does before its own work, and does nothing
else. Steps that never began run (their hooks included); hooks that started
with no outcome recorded are closed as interrupted and never run again.
reprise audit names the agents that need it.

Give the hook flags the interrupted command had, so that the hooks still to
run are the same. An agent with nothing in progress is left as it is.

` + hookSourcesHelp,
		Example: `  reprise finish --agent ide
  reprise finish --agent ide --settings ./hooks.json --json`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runFinish(cmd.Context(), &o)
		},
	}
	o.register(cmd)
	return cmd
}

// runFinish rolls forward what the agent has in progress and reports it.
func runFinish(ctx context.Context, o *finishOptions) (err error) {
	e, before, err := o.openAgent(ctx, &o.restoreOptions, nil, "", o.stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	defer func() { err = explainInterrupt(e, o.agent, err) }()
	agent, err := e.Agent(ctx, o.agent)
	if err != nil {
		return err
	}
	out, what, finished := jsonview.NewFinish(before, agent)
	if o.json {
		return printJSON(o.stdout, out)
	}
	if !out.Finished {
		_, err = fmt.Fprintf(o.stdout, "agent %s has nothing in progress; nothing to do\n", o.agent)
		return err
	}
	fmt.Fprintf(o.stdout, "agent %s: finished the %s %s, left in state %s\n", o.agent, what, out.ID, out.State)
	if finished != nil {
		printRestore(o.stdout, o.agent, finished)
	}
	return nil
}

// shellQuote returns s as one word for a POSIX shell: as it is when it
// holds only characters no shell treats specially, else in single quotes.
func shellQuote(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:,+=@%", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
