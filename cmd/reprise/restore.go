package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// hookOptions choose where hooks come from, shared by start, resume, the
// lifecycle commands and hooks.
type hookOptions struct {
	settings  []string // --settings, in order
	plugins   []string // --plugin-dir, in order
	noDefault bool     // --no-default-settings
}

// register binds f to its flags on cmd.
func (f *hookOptions) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.settings, "settings", nil,
		"also load hooks from the Claude Code settings `FILE` (repeatable)")
	cmd.Flags().StringArrayVar(&f.plugins, "plugin-dir", nil,
		"also load hooks from the plugin `DIR`'s hooks/hooks.json (repeatable)")
	cmd.Flags().BoolVar(&f.noDefault, "no-default-settings", false,
		"skip ~/.claude/settings.json and the project's .claude/settings{,.local}.json")
}

// hookSourcesHelp describes where hooks come from, for the Long help of the
// commands that take hookOptions.
const hookSourcesHelp = `Hooks come from, in this order: ~/.claude/settings.json, then the
project's .claude/settings.json and .claude/settings.local.json (the project
is the working directory of the session the command is about, or the current
directory when that session does not exist or has none), then each
--settings file, then each --plugin-dir, then the installed plugins the
settings files enable (enabledPlugins, from ~/.claude/plugins).
--no-default-settings skips the user and project files and installed
plugins. A --settings file or --plugin-dir that does not exist or does not
parse is a usage error (exit 2), and nothing is run or recorded. A default
file that cannot be read or parsed is reported as a warning and the others
still load; missing default files are skipped silently.`

// check loads each --settings file and --plugin-dir the user gave, and
// returns a usage error for the first that is missing or invalid: asked
// for by name, it must work before anything is recorded. A plugin
// directory without hooks/hooks.json has no hooks, which is fine.
func (f *hookOptions) check() error {
	for _, p := range f.settings {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return usagef("--settings %s: is a directory; give a settings file", p)
		}
		if _, err := hookexec.LoadSettings(p); errors.Is(err, fs.ErrNotExist) {
			return usagef("--settings %s: no such file", p)
		} else if err != nil {
			return usagef("--settings: %w", err)
		}
	}
	for _, dir := range f.plugins {
		st, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return usagef("--plugin-dir %s: no such directory", dir)
		case err != nil:
			return usagef("--plugin-dir: %w", err)
		case !st.IsDir():
			return usagef("--plugin-dir %s: not a directory; give the plugin's directory, which holds hooks/hooks.json", dir)
		}
		if _, err := hookexec.LoadPluginDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return usagef("--plugin-dir: %w", err)
		}
	}
	return nil
}

// load registers in e the hooks of the settings and plugins f names, with
// projectDir as the project of the default settings, and returns the
// settings files it read, in order: what `reprise hooks` lists for one
// project. Configuration errors are printed to stderr as warnings.
func (f *hookOptions) load(e *reprise.Engine, projectDir string, stderr io.Writer) []string {
	var paths []string
	if !f.noDefault {
		home, err := os.UserHomeDir()
		if err != nil {
			warn(stderr, "no home directory for ~/.claude/settings.json: %v", err)
		}
		for _, loc := range hookexec.DefaultSettingsPaths(home, projectDir) {
			paths = append(paths, loc.Path)
		}
	}
	return f.add(e, projectDir, paths, stderr)
}

// loadExplicit registers in e the hooks of the settings files and plugin
// directories f names, for commands whose Engine reads each session's
// default settings itself.
func (f *hookOptions) loadExplicit(e *reprise.Engine, stderr io.Writer) {
	f.add(e, "", nil, stderr)
}

// add adds to e the hooks of paths, then of the settings files and plugins
// f names, and of the installed plugins they enable, and returns the
// settings files in order.
func (f *hookOptions) add(e *reprise.Engine, projectDir string, paths []string, stderr io.Writer) []string {
	for _, p := range f.settings {
		// An absolute path names the file unambiguously as the hooks'
		// source, in outcomes and in the log.
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		paths = append(paths, p)
	}
	hooks, errs := hookexec.LoadAll(paths, f.plugins)
	if home, err := os.UserHomeDir(); err == nil && len(paths) > 0 {
		// The installed plugins the settings enable, as Claude Code loads
		// them, next to those --plugin-dir names.
		plugins, perrs := hookexec.LoadEnabledPlugins(home, projectDir, paths)
		hooks, errs = append(hooks, plugins...), append(errs, perrs...)
	}
	for _, err := range errs {
		warn(stderr, "%v", err)
	}
	for _, h := range hooks {
		if err := e.Hooks().Add(h); err != nil {
			warn(stderr, "%v", err)
		}
	}
	return paths
}

// projectDir returns the working directory of session id, or the current
// directory when the session has none or, as found says, does not exist.
func projectDir(ctx context.Context, e *reprise.Engine, id string) (dir string, found bool, err error) {
	if id != "" {
		if dir, found, err = sessionCwd(ctx, e.Store(), id); err != nil {
			return "", false, err
		}
	}
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return "", found, fmt.Errorf("cannot read the current directory, where the hooks would run (%w); run reprise from a directory that exists", err)
		}
	}
	return dir, found, nil
}

// restoreOptions are the options of the commands that act on an agent:
// start, resume, new --agent and the lifecycle commands.
type restoreOptions struct {
	agent string // --agent
	hooks hookOptions
	// newAgent says that --agent may name an agent the log does not hold
	// yet (start, new --agent): it is taken whole, never as a prefix.
	newAgent bool
}

// resolve makes f.agent, unless it may be new, and *session, when given
// and not empty, the whole ids they are prefixes of in e's store.
func (f *restoreOptions) resolve(ctx context.Context, e *reprise.Engine, session *string) (err error) {
	if !f.newAgent {
		if f.agent, err = resolveID(ctx, e.Store(), "agent", f.agent); err != nil {
			return err
		}
	}
	if session != nil && *session != "" {
		*session, err = resolveID(ctx, e.Store(), "session", *session)
	}
	return err
}

// register binds f to --agent and the hook flags on cmd.
func (f *restoreOptions) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.agent, "agent", "", "the agent host `NAME` doing the restore (required)")
	f.hooks.register(cmd)
}

// restoreFunc is Agent.Start or Agent.Restore.
type restoreFunc func(a *reprise.Agent, ctx context.Context, id string) (*reprise.Transition, error)

// restore opens the store for writing, loads the hooks for session *id,
// gets the agent and runs do on it. It returns the agent's session before
// the restore and the restore, nil when do did nothing. f.agent and *id
// become the whole ids they are prefixes of (restoreOptions.resolve).
func (a *app) restore(ctx context.Context, f *restoreOptions, id *string, do restoreFunc, stderr io.Writer) (from string, r *reprise.Transition, err error) {
	if f.agent == "" {
		return "", nil, usagef("missing --agent")
	}
	if err := validID("--agent", f.agent); err != nil {
		return "", nil, err
	}
	if err := validID("session", *id); err != nil {
		return "", nil, err
	}
	if err := f.hooks.check(); err != nil {
		return "", nil, err
	}
	e, err := a.openHooked(ctx, f.hooks, stderr)
	if err != nil {
		return "", nil, err
	}
	defer closeEngine(e, &err)
	if err := f.resolve(ctx, e, id); err != nil {
		return "", nil, err
	}
	defer func() { err = explainInterrupt(e, f.agent, err) }()
	if _, _, err := projectDir(ctx, e, *id); err != nil {
		return "", nil, err
	}
	agent, err := e.Agent(ctx, f.agent)
	if err != nil {
		return "", nil, err
	}
	from = agent.Current()
	r, err = do(agent, ctx, *id)
	return from, r, explainNoSession(err, f.agent)
}

// explainNoSession tells the user how to give agent a session when err
// says it has none; other errors come back as they are.
func explainNoSession(err error, agent string) error {
	if errors.Is(err, reprise.ErrNoCurrentSession) {
		return fmt.Errorf("agent %s has no current session; give it one with reprise start --agent %s SESSION", agent, agent)
	}
	return err
}

// restoreJSON is the JSON shape of a restore's report.
type restoreJSON = jsonview.Restore

// outcomeJSON is what one hook did.
type outcomeJSON = jsonview.Outcome

// printRestore writes what restore r did, for people.
func printRestore(w io.Writer, agent string, r *reprise.Transition) {
	kind := r.Source + " restore"
	if r.To == "" {
		kind = "end of session"
	}
	fmt.Fprintf(w, "agent %s: %s %s -> %s (restore %s)\n", agent, kind, orNone(r.From), orNone(r.To), r.ID)
	if r.EndReason != "" {
		if r.SaveError != "" {
			fmt.Fprintf(w, "save of %s failed, its messages stay pending: %s\n", r.From, r.SaveError)
		} else {
			fmt.Fprintf(w, "saved %d pending message(s) of %s\n", r.Saved, r.From)
		}
		fmt.Fprintf(w, "SessionEnd hooks on %s (reason %s):\n", r.From, r.EndReason)
		printOutcomes(w, r.EndOutcomes, r.EndInterrupted)
		if r.SuppressOutput {
			fmt.Fprintln(w, "  a hook asked to suppress the output of the end")
		}
	}
	if r.To == "" {
		fmt.Fprintln(w, "the agent has no current session now")
		return
	}
	if r.Trigger != "" || len(r.PreCompactHooks) > 0 {
		fmt.Fprintf(w, "PreCompact hooks on %s (trigger %s):\n", r.To, r.Trigger)
		printOutcomes(w, r.PreCompactOutcomes, r.PreCompactInterrupted)
		if r.PreCompactBlocked {
			fmt.Fprintf(w, "compaction blocked: %s\n", r.PreCompactReason)
			return
		}
	}
	if r.InitialPrompt != "" {
		fmt.Fprintf(w, "initial prompt: %s\n", projection.Clip(r.InitialPrompt, 200))
	}
	fmt.Fprintf(w, "SessionStart hooks on %s (source %s):\n", r.To, r.Source)
	printOutcomes(w, r.StartOutcomes, r.StartInterrupted)
	if len(r.ModifiedConfig) > 0 {
		fmt.Fprintf(w, "modified config: %s\n", r.ModifiedConfig)
	}
	if r.InjectedUUID == "" {
		fmt.Fprintln(w, "no context injected")
		return
	}
	fmt.Fprintf(w, "injected context as message %s:\n", r.InjectedUUID)
	printIndented(w, r.Context)
}

// printIndented writes text, each line indented by two spaces.
func printIndented(w io.Writer, text string) {
	for line := range strings.SplitSeq(text, "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
}

// printOutcomes writes one line per hook outcome, followed by what the
// hook answered besides context: a deny's or a block's reason, a session
// summary, cleanup actions, a modified config. A hook that denied or
// blocked is listed as deny or block, its decision's word, for its status.
func printOutcomes(w io.Writer, list []schema.HookOutcome, interrupted bool) {
	if len(list) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, o := range list {
		detail := ""
		switch {
		case o.Error != "":
			detail = ": " + o.Error
		case o.ExitCode != 0:
			detail = fmt.Sprintf(": exit %d", o.ExitCode)
		}
		if s := strings.TrimSpace(o.Stderr); s != "" {
			detail += fmt.Sprintf("; stderr %q", projection.Clip(s, 200))
		}
		status := string(o.Status)
		said := o.Decision == "block" || o.Decision == "deny"
		if said {
			status = o.Decision // it said no, in the word its decision has
		}
		source := "" // an interrupted hook's outcome names no source
		if o.Source != "" {
			source = "  (" + string(o.Source) + ")"
		}
		fmt.Fprintf(w, "  %-11s %8s  %s%s%s\n", status, time.Duration(o.Duration).Round(time.Millisecond), o.Name, detail, source)
		if said {
			fmt.Fprintf(w, "      reason: %s\n", projection.Clip(o.Reason, 200))
		}
		if o.Request != "" {
			fmt.Fprintf(w, "      asked: %s\n", projection.OneLine(o.Request, 200))
		}
		if o.Answer != "" {
			fmt.Fprintf(w, "      answered: %s\n", projection.OneLine(o.Answer, 200))
		}
		if o.Summary != "" {
			fmt.Fprintf(w, "      session summary: %s\n", projection.Clip(o.Summary, 200))
		}
		for _, c := range o.Cleanup {
			fmt.Fprintf(w, "      cleanup action (for the host): %s\n", projection.Clip(c, 200))
		}
		if len(o.Config) > 0 {
			fmt.Fprintf(w, "      modified config: %s\n", projection.Clip(string(o.Config), 200))
		}
	}
	if interrupted {
		fmt.Fprintln(w, "  interrupted: the process died while these ran; they may have run and were not run again")
	}
}

// orNone returns s, or "(none)" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
