package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
)

// restoreFuncBench is target 5: a runtime restore whose SessionEnd and
// SessionStart hooks are Go functions, against F1 times the durable
// appends the restore makes.
var restoreFuncBench = Bench{
	Name: "restore-func",
	Rows: []Row{{Target: 5, Name: "restore-func", Figure: "runtime restore, Go function hooks",
		Floor: "its appends x F1", Unit: PerOp, What: "restore", Limit: 1.3}},
	Reps: 80, QuickReps: 12,
	Open: func(ctx context.Context, env *Env) (Runner, error) { return openRestore(ctx, env, false) },
}

// restoreCommandBench is target 6: a runtime restore with one trivial
// command hook, run by the library's default runner (under the process's
// supervisor), against its appends x F1 plus a bare os/exec of the same
// command with the same stdin (F4), done in the restore's order.
var restoreCommandBench = Bench{
	Name: "restore-command",
	Rows: []Row{{Target: 6, Name: "restore-command", Figure: "runtime restore, one command hook",
		Floor: "its appends x F1 + F4: bare os/exec, in its order", Unit: PerOp, What: "restore", Limit: 1.15}},
	Reps: 60, QuickReps: 10,
	Open: func(ctx context.Context, env *Env) (Runner, error) { return openRestore(ctx, env, true) },
}

// hookCommand is the trivial command hook: it prints a line of context.
const hookCommand = "echo 'tests pass on main'"

// restoreMessages is how many messages each of the two sessions starts
// with.
const restoreMessages = 20

type restoreRunner struct {
	dir     string
	e       *reprise.Engine
	store   *countingStore
	agent   *reprise.Agent
	ids     [2]string
	floor   *rawDB
	value   []byte
	command bool
	appends int64 // appends of the last restore
	hookAt  int64 // of which were made before its SessionStart hooks ran
	syncs   int64 // log syncs of the last restore
	runs    int64
	commits int64 // bbolt commits over the restores
	n       int
}

func openRestore(ctx context.Context, env *Env, command bool) (Runner, error) {
	name := "restore-func"
	if command {
		name = "restore-command"
	}
	dir, err := mkdir(env, name)
	if err != nil {
		return nil, err
	}
	r := &restoreRunner{dir: dir, command: command}
	if err := r.setup(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *restoreRunner) setup(ctx context.Context) error {
	hooks := hookexec.NewRegistry()
	var err error
	if r.command {
		err = hooks.Add(hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.Command{Line: hookCommand}, Source: "bench"})
	} else {
		err = hooks.OnSessionEnd("bench-end", "", func(context.Context, hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
			return hookexec.SessionEndOutput{SessionSummary: "left cleanly"}, nil
		})
		if err == nil {
			err = hooks.OnSessionStart("bench-start", "", func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
				return hookexec.SessionStartOutput{AdditionalContext: "tests pass on main"}, nil
			})
		}
	}
	if err != nil {
		return err
	}
	if r.e, r.store, err = engineAt(filepath.Join(r.dir, "reprise.db"), false, hooks); err != nil {
		return err
	}
	for i := range r.ids {
		if r.ids[i], err = r.e.CreateSession(ctx, "", r.dir); err != nil {
			return err
		}
		for j := range restoreMessages {
			if _, err := r.e.Buffer(ctx, r.ids[i], message(j)); err != nil {
				return err
			}
		}
		if _, err := r.e.Save(ctx, r.ids[i]); err != nil {
			return err
		}
	}
	size, err := storedSize(ctx, r.e.Store(), r.ids[0])
	if err != nil {
		return err
	}
	r.value = make([]byte, size)
	if r.floor, err = openRaw(filepath.Join(r.dir, "floor.db")); err != nil {
		return err
	}
	if r.agent, err = r.e.Agent(ctx, "bench"); err != nil {
		return err
	}
	_, err = r.agent.Start(ctx, r.ids[0])
	return err
}

func (r *restoreRunner) Close() error { return teardown(r.dir, r.e, r.floor) }

func (r *restoreRunner) Run(ctx context.Context) ([]Sample, error) {
	var s Sample
	rep := func() error {
		target := r.ids[0]
		if r.agent.Current() == target {
			target = r.ids[1]
		}
		before, syncs := r.store.appends.Load(), r.store.syncs()
		d, err := timed(func() error {
			res, err := r.agent.Restore(ctx, target)
			if err == nil && res == nil {
				err = fmt.Errorf("restore to %s did nothing", target)
			}
			return err
		})
		r.appends = r.store.appends.Load() - before
		r.hookAt = r.store.started.Load() - before
		after := r.store.syncs()
		r.syncs = after.Log - syncs.Log
		r.runs++
		r.commits += after.BoltCommits - syncs.BoltCommits
		s.Reprise.Time = d
		return err
	}
	// The floor does what the restore does in the same order: the appends
	// before its SessionStart hooks, the bare exec, the appends after. A
	// disk left idle while a process runs is slower to commit the next
	// write, and both pay for that.
	floor := func() error {
		hookAt := r.hookAt
		if hookAt < 0 || hookAt >= r.appends {
			hookAt = r.appends - 1 // no hook ran: the exec still counts
		}
		for i := range r.appends {
			if r.command && i == hookAt {
				d, err := r.exec()
				if err != nil {
					return err
				}
				s.Floor.Time += d
			}
			d, err := r.floor.update(1, r.value)
			if err != nil {
				return err
			}
			s.Floor.Time += d
		}
		return nil
	}
	// The restore always runs first the very first time, so that the
	// floor knows how many appends it makes.
	if r.appends == 0 {
		r.n = 1
	}
	if err := alternate(&r.n, floor, rep); err != nil {
		return nil, err
	}
	s.Floor.Work, s.Reprise.Work = 1, 1
	return []Sample{s}, nil
}

// exec is F4: the hook's command run bare with os/exec, with the stdin the
// hook gets, its output captured.
func (r *restoreRunner) exec() (time.Duration, error) {
	target := r.agent.Current()
	stdin, err := json.Marshal(struct {
		SessionID      string `json:"session_id"`
		TranscriptPath string `json:"transcript_path"`
		Cwd            string `json:"cwd"`
		HookEventName  string `json:"hook_event_name"`
		Source         string `json:"source"`
	}{target, r.e.TranscriptPath(target), r.dir, string(hookexec.SessionStart), string(reprise.SourceResume)})
	if err != nil {
		return 0, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", hookCommand)
	cmd.Dir = r.dir
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return timed(cmd.Run)
}

func (r *restoreRunner) Note(string) string {
	note := "a restore's " + syncNote(r.appends, r.syncs, float64(r.commits)/float64(max(r.runs, 1)))
	if r.command {
		note += fmt.Sprintf(", the hook run after the first %d; hook: %s", r.hookAt, hookCommand)
	}
	return note
}
