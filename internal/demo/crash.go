package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/schema"
)

// ErrKilled is what the store of the killed process answers once it is
// dead.
var ErrKilled = errors.New("the process was killed")

// Crash is what the demo's last act did.
type Crash struct {
	From, To string // the restore that was killed
	// Killed is the error the killed restore returned.
	Killed error
	// Left is the position of the last event the killed process wrote.
	Left uint64
	// Finished is the restore as the next call finished it.
	Finished *reprise.Transition
	// Runs is how many times the SessionStart hook ran for the restore,
	// across both processes.
	Runs int32
}

// PlayCrash plays the demo's last act on the store at path, left by Play:
// agent Agent restores session to in a process that dies after its
// SessionStart hooks ran and before their outcome is recorded, as a kill
// at that moment would leave it; then the next call on the agent, in a
// new Engine on the same file as a fresh process would open it, finishes
// the restore. The hooks are not run again.
func PlayCrash(ctx context.Context, path, to string) (*Crash, error) {
	var c Crash
	var runs atomic.Int32
	dying, err := openDying(path)
	if err != nil {
		return nil, err
	}
	// The demo tells what the Engines warn about (the roll forward).
	quiet := slog.New(slog.DiscardHandler)
	e := reprise.New(dying, reprise.Options{AllowMissingCwd: true, TranscriptDir: reprise.DefaultTranscriptDir(path), Logger: quiet})
	if err := registerHooks(e, &runs); err != nil {
		return nil, errors.Join(err, e.Close())
	}
	agent, err := e.Agent(ctx, Agent)
	if err != nil {
		return nil, errors.Join(err, e.Close())
	}
	c.From, c.To = agent.Current(), to
	if _, c.Killed = agent.Restore(ctx, to); !errors.Is(c.Killed, ErrKilled) {
		return nil, errors.Join(fmt.Errorf("the restore was to be killed, and returned %v", c.Killed), e.Close())
	}
	c.Left = dying.last
	if err := e.Close(); err != nil {
		return nil, err
	}

	// The next process: the same file, the same hooks.
	e, err = reprise.Open(path, reprise.Options{AllowMissingCwd: true, Logger: quiet})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	if err := registerHooks(e, &runs); err != nil {
		return nil, err
	}
	if agent, err = e.Agent(ctx, Agent); err != nil {
		return nil, err
	}
	history := agent.History()
	c.Finished = &history[len(history)-1]
	c.Runs = runs.Load()
	return &c, nil
}

// dyingStore is a bbolt store whose process dies just as it would record
// what SessionStart hooks did: from then on every append fails.
type dyingStore struct {
	eventlog.Store
	mu   sync.Mutex
	dead bool
	last uint64 // the position of the last event appended before dying
}

// openDying opens the bbolt file at path as a dyingStore.
func openDying(path string) (*dyingStore, error) {
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		return nil, err
	}
	return &dyingStore{Store: s}, nil
}

// Append appends recs, unless the store is dead or recs record the
// outcome of SessionStart hooks, which kills it.
func (s *dyingStore) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		if r.Type == schema.TypeSessionStartHookRan {
			s.dead = true
		}
	}
	if s.dead {
		return nil, ErrKilled
	}
	evs, err := s.Store.Append(ctx, expect, recs)
	if len(evs) > 0 {
		s.last = evs[len(evs)-1].Position
	}
	return evs, err
}
