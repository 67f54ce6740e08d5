package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/messages"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/turn"
)

// hookEnvEnv names the environment variable that, when set, lists the only
// variables of reprise's environment that command hooks inherit, separated
// by commas: for example PATH,HOME,LANG.
const hookEnvEnv = "REPRISE_HOOK_ENV"

// hookRunnerFromEnv returns the library's runner, under which hooks die
// with reprise even when it is killed, passing hooks only the variables
// $REPRISE_HOOK_ENV names when it is set. Prompt and agent hooks ask the
// Messages API that the environment names (internal/messages.FromEnv:
// $ANTHROPIC_BASE_URL, $ANTHROPIC_API_KEY or $ANTHROPIC_AUTH_TOKEN, and
// $ANTHROPIC_SMALL_FAST_MODEL for hooks that name no model).
func hookRunnerFromEnv() hookexec.Exec {
	models := messages.FromEnv().Models()
	r := hookexec.Exec{Evaluator: turn.PromptEvaluator(models), AgentEvaluator: turn.AgentEvaluator(models)}
	if list := os.Getenv(hookEnvEnv); list != "" {
		r.InheritEnv = []string{}
		for _, name := range strings.Split(list, ",") {
			if name = strings.TrimSpace(name); name != "" {
				r.InheritEnv = append(r.InheritEnv, name)
			}
		}
	}
	return r
}

// interrupts cancels a context on the first SIGINT or SIGTERM and
// remembers which one came. After it, both signals take their default
// action again, so a second one ends the process at once.
type interrupts struct {
	ch     chan os.Signal
	caught atomic.Value // the os.Signal that came
	done   chan struct{}
}

// notifySignals returns a context that the first SIGINT or SIGTERM
// cancels, and what watches for them; call stop when the command is done.
func notifySignals(parent context.Context) (context.Context, *interrupts) {
	ctx, cancel := context.WithCancelCause(parent)
	in := &interrupts{ch: make(chan os.Signal, 1), done: make(chan struct{})}
	signal.Notify(in.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-in.ch:
			in.caught.Store(sig)
			signal.Stop(in.ch)
			cancel(signalCause{sig})
		case <-in.done:
			cancel(nil)
		}
	}()
	return ctx, in
}

// stop stops watching for signals.
func (in *interrupts) stop() {
	signal.Stop(in.ch)
	close(in.done)
}

// exitCode is code, or when a signal interrupted the command, 128 plus
// the signal's number (130 for SIGINT, 143 for SIGTERM), as shells report
// a command a signal ended.
func (in *interrupts) exitCode(code int) int {
	if sig, ok := in.caught.Load().(syscall.Signal); ok {
		return 128 + int(sig)
	}
	return code
}

// signalCause is the cause of a context a signal cancelled.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string { return "interrupted by " + c.sig.String() }

// signalExitCode returns the exit code of a command whose context a signal
// cancelled, 128 plus the signal's number, and false for any other
// context.
func signalExitCode(ctx context.Context) (int, bool) {
	var c signalCause
	if errors.As(context.Cause(ctx), &c) {
		if sig, ok := c.sig.(syscall.Signal); ok {
			return 128 + int(sig), true
		}
	}
	return 0, false
}

// interruptedError is an ErrInterrupted told for the command line: which
// restore stopped and which command finishes it.
type interruptedError struct {
	msg string
	err error
}

func (e *interruptedError) Error() string { return e.msg }
func (e *interruptedError) Unwrap() error { return e.err }

// explainInterrupt rewords err, when it is the ErrInterrupted of agent,
// to say which restore stopped and which command finishes it; the
// restore is read from the log of e. Any other err is returned as it is.
func explainInterrupt(e *reprise.Engine, agent string, err error) error {
	if !errors.Is(err, reprise.ErrInterrupted) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	view := projection.NewAgent(agent)
	if rerr := e.Store().ReadStream(ctx, projection.AgentStream(agent), 1, view.Apply); rerr != nil || view.Restore == nil {
		return &interruptedError{msg: fmt.Sprintf("interrupted: agent %s stopped at a step boundary; %s", agent, finishHint(agent)), err: err}
	}
	r := view.Restore
	what := fmt.Sprintf("the %s restore of agent %s to session %s", r.Source, agent, r.To)
	if r.To == "" {
		what = fmt.Sprintf("the end of session %s on agent %s", r.From, agent)
	}
	return &interruptedError{err: err, msg: "interrupted: " + what + " stopped at a step boundary; " + finishHint(agent)}
}

// finishHint says which command finishes a restore of agent left in
// flight: any command on the agent, and reprise finish does nothing else.
func finishHint(agent string) string {
	return fmt.Sprintf("the next command on agent %s finishes it (reprise finish --agent %s does only that)", agent, agent)
}
