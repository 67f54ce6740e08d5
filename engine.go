package reprise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reprise-dev/reprise/deletion"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/eventlog/remote"
	"github.com/reprise-dev/reprise/files"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// Message is one conversation message (schema.Message). Its fields:
//
//	UUID          string  // the message's id; the Engine fills it when empty
//	ParentUUID    string  // the message before it; filled when it is saved
//	Role          string  // "user" or "assistant"
//	IsMeta        bool    // seen by the model, not typed by the user (hook context)
//	Summary       bool    // the summary a compaction begins the model's view with
//	Timestamp     int64   // UTC unix nanoseconds; the Engine fills it when 0
//	Content       []Block // the message's content blocks
//	Record        []byte  // the Claude Code transcript line it was imported from
//	ToolUseResult []byte  // a tool_result's toolUseResult, as the transcript keeps it
//	Attachment    []byte  // the attachment record a hook context is kept as
//
// Hosts set Role, Content and IsMeta; Text, ToolUseMessage and
// ToolUseBlock build the usual ones.
type Message = schema.Message

// Block is one content block of a Message (schema.Block): Type ("text",
// "tool_use", "tool_result", ...); Text, a text block's text; Raw, every
// other block as the Messages API writes it, JSON kept as it is.
type Block = schema.Block

// Text returns a message of role with one text block.
func Text(role, text string) Message {
	return Message{Role: role, Content: []Block{{Type: "text", Text: text}}}
}

// Options configure an Engine. The zero value is ready to use.
type Options struct {
	// Hooks holds the hooks restores run. Nil means a new empty registry,
	// which Engine.Hooks returns for registration.
	Hooks *hookexec.Registry
	// Logger receives warnings: failed saves, failed or interrupted hooks.
	// Nil means slog.Default().
	Logger *slog.Logger
	// Now stamps events and messages. Nil means time.Now.
	Now func() time.Time
	// NewID makes message uuids, restore ids and default session ids. Nil
	// means random version 4 UUIDs.
	NewID func() string
	// LockTimeout is how long Open waits for a bbolt file another process
	// holds before failing with eventlog.ErrLocked. Zero means 1 second.
	LockTimeout time.Duration
	// ClaudeSettings makes every hook run also read Claude Code's settings
	// files: ~/.claude/settings.json, and the session's project's
	// .claude/settings.json and .claude/settings.local.json, the project
	// being the session's working directory, and the hooks of the
	// installed plugins they enable (enabledPlugins), found where Claude
	// Code installs them under ~/.claude/plugins. Their hooks run before
	// the registry's. A broken file or plugin is skipped with a warning.
	ClaudeSettings bool
	// StopBlockCap is how many consecutive stops Stop hooks may block
	// before the Engine stops asking them. Zero means DefaultStopBlockCap.
	StopBlockCap int
	// MaxSubagentDepth is how deep subagents may nest: a subagent of depth
	// d (1 for the main agent's own) may start one of depth d+1 while d is
	// below it, as Claude Code's CLAUDE_CODE_MAX_SUBAGENT_SPAWN_DEPTH
	// bounds them. Zero means DefaultMaxSubagentDepth; -1 lets no
	// subagent start one.
	MaxSubagentDepth int
	// PermissionMode is the host's permission mode, which tool hooks get
	// as permission_mode: Claude Code's default, plan, acceptEdits,
	// dontAsk or bypassPermissions. Empty means "default".
	PermissionMode string
	// ServeReads makes an Engine over a bbolt file (Open only, not
	// ReadOnly) serve the file's reads to other processes while it holds
	// the file, which no other process can open meanwhile: the reads of
	// package eventlog/remote, on the Unix socket
	// remote.SocketPath(path), which the reprise command reads through
	// when it finds the store locked. Close stops it. A socket that cannot
	// be made is logged, and the Engine works on without it. Hosts that
	// keep a store open for long should set it, so that the store stays
	// readable to the audit tools; the socket is private to the user.
	ServeReads bool
	// ServeSearch, with ServeReads, makes the socket answer its readers'
	// searches too, with the index the host keeps: Open calls it with the
	// store once the socket is made, serves what it returns at
	// remote.SearchPath, and closes it in Close, after the socket. Package
	// search's Served(path) is the one to give; the root package links no
	// search library itself. Nil serves no searches: a reader then opens
	// the index itself, for as long as a search takes, unless the host
	// holds it.
	ServeSearch func(store eventlog.Store) remote.Searcher
	// ReadOnly opens the store for reading only (Open only): several
	// read-only Engines may share a file, and every write fails with
	// eventlog.ErrReadOnly.
	ReadOnly bool
	// TranscriptDir holds each session's Claude Code transcript
	// (<id>.jsonl), the files hooks read as transcript_path, the
	// CLAUDE_ENV_FILE of SessionStart runs, and hook output too large to
	// inject. Empty means DefaultTranscriptDir of a bbolt file (Open), and
	// for a store given to New a private temporary directory that Close
	// removes: the Engine never writes anywhere else. Each store needs a
	// directory of its own: files are named by session id.
	TranscriptDir string
	// Files replaces TranscriptDir with another file seam, such as
	// NewMemoryFiles in tests. The Engine closes it in Close.
	Files Files
	// Runner runs the hooks. Nil means hookexec.Exec, the real runner,
	// under which command hooks die with the host, even by SIGKILL.
	Runner hookexec.Runner
	// Observer is told about actions, steps, hook runs and appends, for
	// tracing and metrics. Nil means none.
	Observer Observer
	// AllowMissingCwd lets CreateSession and New take a working directory
	// that does not exist (yet); it is still stored absolute.
	AllowMissingCwd bool
	// TranscriptOnSave keeps each session's transcript file current after
	// every save, for hosts whose tools tail it. Otherwise a transcript is
	// written when hooks are about to read it, and kept current from then
	// on only through lifecycle steps (an injected reminder is in it at
	// once). Saves cost more with it.
	TranscriptOnSave bool
	// AsyncHookEnded, when set, is told each "async" or "asyncRewake"
	// command hook's end once it is recorded, on a goroutine of the
	// Engine's: a host wakes the model on a Rewake with it. It must not
	// call the agent's actions itself, and should return quickly.
	AsyncHookEnded func(AsyncHookEnded)
}

// Engine keeps sessions in an event log and runs restores. It is safe for
// concurrent use by many agents.
type Engine struct {
	store eventlog.Store
	hooks *hookexec.Registry
	log   *slog.Logger
	now   func() time.Time
	newID func() string
	// files holds transcripts, env files and spilled hook output.
	files Files
	// legacyFiles is the "transcripts" directory beside a bbolt file, where
	// stores kept their files before each had its own; Vacuum removes a
	// deleted session's files there too. Nil when there is none.
	legacyFiles Files
	runner      hookexec.Runner
	// transcriptOnSave: sync transcripts after every save.
	transcriptOnSave bool
	allowMissingCwd  bool
	observer         Observer
	scoped           hookexec.Scoped
	stopCap          int
	subagentDepth    int
	permissionMode   string
	// claudeSettings: read Claude Code settings files at each hook run.
	claudeSettings bool
	// warned holds the settings warnings already logged (warnOnce).
	warned sync.Map

	// reads serves the store's reads on its socket (Options.ServeReads),
	// or is nil.
	reads *remote.Server
	// search answers the searches of the readers of reads
	// (Options.ServeSearch), nil when it answers none.
	search remote.Searcher

	// async counts the async hooks running, which Close waits for;
	// onAsync is Options.AsyncHookEnded.
	async   sync.WaitGroup
	onAsync func(AsyncHookEnded)

	mu       sync.Mutex
	sessions map[string]*session
	agents   map[string]*Agent
}

// session is the Engine's view of one conversation: what the log holds and
// what the host buffered but has not saved yet. mu guards both.
type session struct {
	mu      sync.Mutex
	conv    *projection.Conversation
	pending []Message
	// transcribed is how many messages the transcript file holds, or -1
	// before this Engine first wrote it.
	transcribed int
	// ledger follows the tool calls of conv's messages as the model sees
	// them, from ledgerFrom (conv.ViewStart when it was made) up to
	// ledgered; toolUses brings it up to date.
	ledger               projection.ToolUseLedger
	ledgerFrom, ledgered int
}

// toolUses returns s's tool call ledger, up to date with its saved
// messages. s.mu must be held.
func (s *session) toolUses() *projection.ToolUseLedger {
	if s.ledgerFrom != s.conv.ViewStart || s.ledgered < s.conv.ViewStart || s.ledgered > len(s.conv.Messages) {
		s.ledger, s.ledgerFrom, s.ledgered = projection.ToolUseLedger{}, s.conv.ViewStart, s.conv.ViewStart
	}
	for _, m := range s.conv.Messages[s.ledgered:] {
		s.ledger.Add(m)
	}
	s.ledgered = len(s.conv.Messages)
	return &s.ledger
}

func newSession(conv *projection.Conversation) *session {
	return &session{conv: conv, transcribed: -1}
}

// Open is OpenContext with a context that is never cancelled.
func Open(path string, opts Options) (*Engine, error) {
	return OpenContext(context.Background(), path, opts)
}

// OpenContext opens (creating if needed) the bbolt file at path and returns
// an Engine that owns it. A file another process holds is waited for
// Options.LockTimeout, then fails with eventlog.ErrLocked. ctx is checked
// before the file is opened.
//
// Other backends are the caller's choice: open one (PostgreSQL through
// package pgstore) and hand it to New. A postgres:// URL given here is
// ErrDatabaseURL, so that an embedder of the file store never links a
// database driver.
func OpenContext(ctx context.Context, path string, opts Options) (*Engine, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if strings.HasPrefix(path, "postgres://") || strings.HasPrefix(path, "postgresql://") {
		return nil, fmt.Errorf("%w: open it with pgstore.Open and pass the store to New", ErrDatabaseURL)
	}
	store, err := boltstore.Open(path, boltstore.Options{Timeout: opts.LockTimeout, ReadOnly: opts.ReadOnly, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	legacy := false
	if opts.TranscriptDir == "" && opts.Files == nil {
		opts.TranscriptDir = DefaultTranscriptDir(path)
		fi, err := os.Lstat(legacyTranscriptDir(path))
		legacy = err == nil && fi.IsDir()
	}
	e := New(store, opts)
	if legacy {
		e.legacyFiles = DirFiles(legacyTranscriptDir(path))
	}
	if opts.ServeReads && !opts.ReadOnly {
		if opts.ServeSearch != nil {
			e.search = opts.ServeSearch(store)
		}
		if e.reads, err = remote.Serve(store, path, e.log, e.search); err != nil {
			e.log.Warn("the store's reads are not served to other processes", "error", err)
		}
	}
	return e, nil
}

// DefaultTranscriptDir returns the transcript directory of the bbolt file
// at path: path, made absolute, with ".transcripts" added, beside the file and named after
// it, so that two stores in one directory never share a session's files.
// (Stores opened before this rule kept theirs in a "transcripts" directory
// beside the file; transcripts are written anew from the log, so such a
// store simply moves on to its own directory; Vacuum still removes a
// deleted session's files from the old one.)
func DefaultTranscriptDir(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path + ".transcripts"
}

// legacyTranscriptDir is where the bbolt file at path kept its files
// before DefaultTranscriptDir, shared with the other stores beside it.
func legacyTranscriptDir(path string) string {
	return filepath.Join(filepath.Dir(path), "transcripts")
}

// New returns an Engine over store. The Engine owns store from then on and
// closes it in Close. Several Engines may share a store only if it
// implements eventlog.StreamLocker, as every store of this module does:
// the lock keeps their restores of one agent apart.
//
// A store that keeps indexes (eventlog.Indexed, as every writable store of
// this module does) is made to keep the session index in the transaction
// of every append, so that Sessions reads one row per session rather than
// the whole log. New brings the index up to date first, which, for a store
// written by a build that kept none, reads the whole log once.
func New(store eventlog.Store, opts Options) *Engine {
	e := &Engine{
		store: store, hooks: opts.Hooks, log: opts.Logger, now: opts.Now, newID: opts.NewID, onAsync: opts.AsyncHookEnded,
		files: opts.Files, runner: opts.Runner, stopCap: opts.StopBlockCap, subagentDepth: opts.MaxSubagentDepth, claudeSettings: opts.ClaudeSettings,
		permissionMode:   opts.PermissionMode,
		transcriptOnSave: opts.TranscriptOnSave, allowMissingCwd: opts.AllowMissingCwd, observer: opts.Observer,
		sessions: map[string]*session{}, agents: map[string]*Agent{},
	}
	if e.hooks == nil {
		e.hooks = hookexec.NewRegistry()
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.newID == nil {
		e.newID = newUUID
	}
	if e.stopCap <= 0 {
		e.stopCap = DefaultStopBlockCap
	}
	switch e.subagentDepth {
	case 0:
		e.subagentDepth = DefaultMaxSubagentDepth
	case -1:
		e.subagentDepth = 1 // the main agent's own, and no deeper
	}
	switch {
	case e.files != nil:
	case opts.TranscriptDir != "":
		e.files = DirFiles(opts.TranscriptDir)
	default:
		e.files = files.Temp()
	}
	if e.runner == nil {
		e.runner = hookexec.Exec{Logger: e.log}
	}
	if x, ok := store.(eventlog.Indexed); ok {
		err := x.Index(context.Background(), projection.SessionIndex)
		if err != nil && !errors.Is(err, eventlog.ErrReadOnly) {
			e.log.Warn("the session index is not kept: listing sessions reads the whole log", "error", err)
		}
	}
	return e
}

// Hooks returns the registry restores take their hooks from.
func (e *Engine) Hooks() *hookexec.Registry { return e.hooks }

// AddSessionHook gives session id a hook of its own and returns the hook's
// id. Adding an equal hook again returns the same id. The session's hooks
// run after the registry's and are dropped when the session ends.
func (e *Engine) AddSessionHook(id string, h hookexec.Hook) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	return e.scoped.Add(id, h)
}

// AddSessionHookWith is AddSessionHook with Claude Code's options for
// session hooks: a chosen id (ErrHookIDInUse when another hook of the
// session has it), an error message used as the failure text, a callback
// after each ok outcome (in process, never recorded), and once (removed
// after its first ok outcome).
func (e *Engine) AddSessionHookWith(id string, h hookexec.Hook, opts hookexec.ScopedOptions) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	return e.scoped.AddWith(id, h, opts)
}

// AddFrontmatterHooks adds to session id the hooks of a skill's or
// subagent's frontmatter, as hookexec.Scoped.AddFrontmatter reads them
// (its "once" honoured), and returns their ids for RemoveSessionHook when
// the skill or subagent ends.
func (e *Engine) AddFrontmatterHooks(id, source string, hooks json.RawMessage) ([]string, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	return e.scoped.AddFrontmatter(id, source, hooks)
}

// SessionHooks lists session id's own hooks of event (every event for ""),
// with their ids and options, in the order they were added.
func (e *Engine) SessionHooks(id string, event hookexec.Event) []hookexec.ScopedHook {
	return e.scoped.List(id, event)
}

// RemoveSessionHook takes hook hookID away from session id and reports
// whether it was there.
func (e *Engine) RemoveSessionHook(id, hookID string) bool { return e.scoped.Remove(id, hookID) }

// HooksFor returns the hooks that would run for event with the given source
// (SessionStart) or reason (SessionEnd) on session id, in the order they
// run: with Options.ClaudeSettings, those of the user's and the session's
// project's Claude Code settings files; then the registry's; then the
// session's own; each command once. Each hook's Source says where it came
// from.
func (e *Engine) HooksFor(ctx context.Context, event hookexec.Event, value, id string) []hookexec.Hook {
	var hooks []hookexec.Hook
	if e.claudeSettings {
		hooks = e.projectHooks(ctx, id).Match(event, value)
	}
	hooks = append(hooks, e.hooks.Match(event, value)...)
	hooks = append(hooks, e.scoped.Match(id, event, value)...)
	return hookexec.Dedupe(hooks)
}

// projectHooks reads the Claude Code settings that apply to session id:
// the user's, then its project's (its working directory's), then the hooks
// of the installed plugins those settings enable. They are read
// at every run, so edits apply to the next restore. Files that cannot be
// read or parsed are logged and skipped.
func (e *Engine) projectHooks(ctx context.Context, id string) *hookexec.Registry {
	cwd := ""
	if info, err := e.Session(ctx, id); err == nil {
		cwd = info.Cwd
	}
	home, _ := os.UserHomeDir()
	var paths []string
	for _, loc := range hookexec.DefaultSettingsPaths(home, cwd) {
		paths = append(paths, loc.Path)
	}
	hooks, errs := hookexec.LoadAll(paths, nil)
	for _, err := range errs {
		e.warnOnce(skipped(err, "settings file skipped"), err)
	}
	plugins, errs := hookexec.LoadEnabledPlugins(home, cwd, paths)
	for _, err := range errs {
		e.warnOnce(skipped(err, "installed plugin skipped"), err)
	}
	hooks = append(hooks, plugins...)
	reg := hookexec.NewRegistry()
	if err := reg.AddAll(hooks); err != nil {
		e.warnOnce("settings hook skipped", err)
	}
	return reg
}

// skipped is the warning for err, an error loading hooks: msg, or, when
// the file loaded but some of its matchers cannot run, says so.
func skipped(err error, msg string) string {
	if hookexec.OnlyMatchers(err) {
		return "hook matcher ignored: its hooks never run"
	}
	return msg
}

// warnOnce logs msg with err the first time this Engine meets that error:
// settings are read at every run, and a file that stays broken is said to
// be so once, not at every restore.
func (e *Engine) warnOnce(msg string, err error) {
	if _, seen := e.warned.LoadOrStore(msg+"\x00"+err.Error(), true); !seen {
		e.log.Warn(msg, "error", err)
	}
}

// Store returns the event log under the Engine, for reading.
func (e *Engine) Store() eventlog.Store { return e.store }

// Close waits for the "async" hooks still running to end (each ends by its
// timeout) and records their ends, saves every session's pending
// messages, then closes the store and the Engine's files. It returns the
// errors of saves that failed; those messages are lost.
func (e *Engine) Close() error {
	// Async hooks end by their timeouts; each end is recorded.
	e.async.Wait()
	e.mu.Lock()
	agents := slices.Collect(maps.Values(e.agents))
	e.mu.Unlock()
	for _, a := range agents {
		a.asyncMu.Lock()
		queued := len(a.ended) > 0
		a.asyncMu.Unlock()
		if queued { // an agent with none is not waited for
			a.mu.Lock()
			a.flushAsync(context.Background())
			a.mu.Unlock()
		}
	}
	e.mu.Lock()
	sessions := make([]*session, 0, len(e.sessions))
	for _, s := range e.sessions {
		sessions = append(sessions, s)
	}
	e.mu.Unlock()
	var errs []error
	for _, s := range sessions {
		s.mu.Lock()
		if s.conv.Deleted {
			s.mu.Unlock()
			continue
		}
		if _, err := e.save(context.Background(), s); err != nil {
			errs = append(errs, fmt.Errorf("save %s on close: %w", s.conv.ID, err))
		}
		s.mu.Unlock()
	}
	if e.reads != nil {
		errs = append(errs, e.reads.Close())
	}
	if e.search != nil {
		errs = append(errs, e.search.Close())
	}
	if e.legacyFiles != nil {
		errs = append(errs, e.legacyFiles.Close())
	}
	return errors.Join(append(errs, e.store.Close(), e.files.Close())...)
}

func (e *Engine) stamp() int64 { return e.now().UTC().UnixNano() }

// CreateSession starts a session with id (a new UUID when empty) and working
// directory cwd, and returns its id. The directory is stored absolute: ""
// means the process's working directory, and a relative one is resolved
// against it. One that is not an existing directory is ErrNoDirectory,
// unless Options.AllowMissingCwd is set. Hooks run in this directory and
// nowhere else.
func (e *Engine) CreateSession(ctx context.Context, id, cwd string) (string, error) {
	cwd, err := e.resolveCwd(cwd)
	if err != nil {
		return "", err
	}
	return e.createSession(ctx, &schema.SessionCreated{ID: id, Cwd: cwd})
}

// resolveCwd makes cwd absolute and checks that it is a directory.
func (e *Engine) resolveCwd(cwd string) (string, error) {
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrNoDirectory, cwd, err)
	}
	if e.allowMissingCwd {
		return abs, nil
	}
	if info, err := os.Stat(abs); err != nil || !info.IsDir() {
		return "", fmt.Errorf("%w: %s", ErrNoDirectory, abs)
	}
	return abs, nil
}

// createSession writes created, the SessionCreated of a new session (a
// new id when its ID is empty), and returns the session's id.
func (e *Engine) createSession(ctx context.Context, created *schema.SessionCreated) (string, error) {
	if created.ID == "" {
		created.ID = e.newID()
	}
	id := created.ID
	if err := ValidateID(id); err != nil {
		return "", err
	}
	stream := projection.SessionStream(id)
	rec, err := schema.NewRecord(stream, created, e.stamp(), "")
	if err != nil {
		return "", err
	}
	evs, err := e.appendTimed(ctx, []eventlog.Expect{{Stream: stream}}, []eventlog.Record{rec})
	if errors.Is(err, eventlog.ErrConflict) {
		return "", deletion.Taken(ctx, e.store, id)
	}
	if err != nil {
		return "", err
	}
	conv := projection.NewConversation(id)
	if err := conv.Apply(evs[0]); err != nil {
		return "", err
	}
	e.mu.Lock()
	if e.sessions[id] == nil { // a reader may have cached it already: keep one copy
		e.sessions[id] = newSession(conv)
	}
	e.mu.Unlock()
	return id, nil
}

// session returns the Engine's view of session id, reading it from the log
// on first use. A session with no events is ErrSessionNotFound and is not
// kept; a deleted one is ErrSessionDeleted.
func (e *Engine) session(ctx context.Context, id string) (*session, error) {
	s, err := e.load(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conv.Deleted {
		return nil, deletion.Deleted(id)
	}
	return s, nil
}

// load is session without the check for a tombstone: the stepper decides
// what a deleted session means for an action.
func (e *Engine) load(ctx context.Context, id string) (*session, error) {
	e.mu.Lock()
	s := e.sessions[id]
	e.mu.Unlock()
	if s != nil {
		return s, nil // its id was checked when it was loaded
	}
	if err := ValidateID(id); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSessionNotFound, err)
	}
	conv := projection.NewConversation(id)
	stream := projection.SessionStream(id)
	if head, err := e.store.Head(ctx, stream); err == nil && head > 1 {
		conv.Messages = make([]Message, 0, head-1)
	}
	if err := e.store.ReadStream(ctx, stream, 1, conv.Apply); err != nil {
		return nil, fmt.Errorf("read session %s: %w", id, err)
	}
	if conv.Head == 0 {
		return nil, fmt.Errorf("%w: %s", ErrSessionNotFound, id)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.sessions[id]; s != nil { // loaded concurrently
		return s, nil
	}
	s = newSession(conv)
	e.sessions[id] = s
	return s, nil
}

// catchUp applies events other writers appended to s since it was read.
// s.mu must be held.
func (e *Engine) catchUp(ctx context.Context, s *session) error {
	return e.store.ReadStream(ctx, projection.SessionStream(s.conv.ID), s.conv.Head+1, s.conv.Apply)
}

// prepare finds session id and validates m; take then fills its uuid and
// timestamp, once the session's lock is held.
func (e *Engine) prepare(ctx context.Context, id string, m Message) (*session, error) {
	if m.Role != "user" && m.Role != "assistant" {
		return nil, fmt.Errorf("%w: role %q", ErrInvalidMessage, m.Role)
	}
	return e.load(ctx, id)
}

// take returns m with its uuid and timestamp, when s takes messages; else
// why it does not: it is deleted, its import is unfinished, or m would
// make a conversation the Messages API refuses (checkToolUses). s.mu must
// be held.
func (e *Engine) take(s *session, m Message) (Message, error) {
	switch {
	case s.conv.Deleted:
		return m, deletion.Deleted(s.conv.ID)
	case s.conv.Importing:
		return m, fmt.Errorf("%w: session %s; resume its import, or delete it", ErrImportUnfinished, s.conv.ID)
	}
	if err := s.checkToolUses(m); err != nil {
		return m, err
	}
	if m.UUID == "" {
		m.UUID = e.newID()
	}
	if m.Timestamp == 0 {
		m.Timestamp = e.stamp()
	}
	return m, nil
}

// Buffer adds m to session id's pending messages without writing it; Save
// (or a restore away from the session) writes it. It returns m as stamped.
func (e *Engine) Buffer(ctx context.Context, id string, m Message) (Message, error) {
	s, err := e.prepare(ctx, id, m)
	if err != nil {
		return m, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, err = e.take(s, m); err != nil {
		return m, err
	}
	if len(s.pending) == cap(s.pending) {
		// Doubling, where append grows a long slice by a quarter: a long
		// turn's messages are copied twice on average, not five times.
		s.pending = slices.Grow(s.pending, len(s.pending)+8)
	}
	s.pending = append(s.pending, m)
	return m, nil
}

// Append writes m to session id durably, after any pending messages, and
// returns it as stored. Like Save, it places them after what other writers
// appended first and tries again, up to MaxSaveTries times. On error m is
// not kept: the caller decides whether to retry. Messages that were
// already pending stay pending.
func (e *Engine) Append(ctx context.Context, id string, m Message) (Message, error) {
	s, err := e.prepare(ctx, id, m)
	if err != nil {
		return m, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, err = e.take(s, m); err != nil {
		return m, err
	}
	s.pending = append(s.pending, m)
	if _, err := e.save(ctx, s); err != nil {
		s.pending = s.pending[:len(s.pending)-1]
		return m, err
	}
	return s.conv.Messages[len(s.conv.Messages)-1], nil
}

// MaxSaveTries bounds how often Append, Save and Close try to write a
// session's pending messages while other writers (other Engines, other
// processes on a shared store) keep appending to the session first. After
// each such conflict the Engine reads what they wrote, chains the pending
// messages after it and tries again. Each conflict means another writer's
// append went through, and the writers that lost take turns on the
// session's stream lock, so a try is lost only to a writer's first try.
const MaxSaveTries = 16

// Save writes session id's pending messages in one atomic append and returns
// how many it wrote. If another writer appended to the session first, Save
// catches up, places the messages after the other writer's and tries
// again, up to MaxSaveTries times in all; when every try lost, it returns
// an error matching eventlog.ErrConflict and the messages stay pending.
func (e *Engine) Save(ctx context.Context, id string) (int, error) {
	s, err := e.session(ctx, id)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return e.save(ctx, s)
}

// save writes s's pending messages, trying again after conflicts: the
// writers that lost line up on the session's stream lock, when the store
// has one, so that they take turns instead of losing to each other again.
// s.mu must be held.
func (e *Engine) save(ctx context.Context, s *session) (int, error) {
	n, err := e.saveOnce(ctx, s)
	if !saveAgain(err, s) {
		return n, err
	}
	release := e.lockSession(ctx, s.conv.ID)
	defer release()
	for try := 2; ; try++ {
		n, err = e.saveOnce(ctx, s)
		if !saveAgain(err, s) || try == MaxSaveTries {
			return n, err
		}
		if perr := pause(ctx, try); perr != nil {
			return 0, errors.Join(err, perr)
		}
	}
}

// saveAgain reports whether a save that ended with err is worth another
// try: another writer appended first, and the session is still there.
func saveAgain(err error, s *session) bool {
	return errors.Is(err, eventlog.ErrConflict) && !s.conv.Deleted
}

// lockSession takes session id's stream lock in a store that has such
// locks, waiting for it up to saveLockWait, and returns its release. A
// lock it cannot get is not needed: the conditional append keeps writers
// apart anyway, the lock only makes them take turns.
func (e *Engine) lockSession(ctx context.Context, id string) (release func()) {
	locker, ok := e.store.(eventlog.StreamLocker)
	if !ok {
		return func() {}
	}
	// A store may wait for a free lock slot: never past saveLockWait.
	wait, cancel := context.WithTimeout(ctx, saveLockWait)
	defer cancel()
	stream := projection.SessionStream(id)
	for {
		release, err := locker.TryLock(wait, stream)
		if err == nil {
			return release
		}
		if !errors.Is(err, eventlog.ErrBusy) || pause(wait, 1) != nil {
			return func() {}
		}
	}
}

// pause waits a random while, up to try times saveBackoff, so that
// writers that lost together do not meet again at once.
func pause(ctx context.Context, try int) error {
	t := time.NewTimer(rand.N(time.Duration(try) * saveBackoff))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// saveBackoff and saveLockWait pace the tries of a save that lost.
const (
	saveBackoff  = time.Millisecond
	saveLockWait = 2 * time.Second
)

// saveOnce makes one try at writing s's pending messages; a conflict
// leaves s caught up. s.mu must be held.
func (e *Engine) saveOnce(ctx context.Context, s *session) (int, error) {
	if s.conv.Deleted {
		return 0, deletion.Deleted(s.conv.ID)
	}
	ready := lifecycle.SaveMessages(s.view(), e.stamp())
	if len(ready.Records) == 0 {
		return 0, nil
	}
	evs, err := e.appendTimed(ctx, ready.Expect, ready.Records)
	if err != nil {
		return 0, e.saveFailed(ctx, s, err)
	}
	// Room for the messages at once, rather than a copy of the whole
	// conversation each time appending one outgrows it.
	s.conv.Messages = slices.Grow(s.conv.Messages, len(evs))
	for i, ev := range evs {
		if err := s.fold(ev, ready.Payloads[i]); err != nil {
			return 0, err
		}
	}
	s.dropPending(len(evs))
	if e.transcriptOnSave {
		e.keepTranscript(s, true)
	}
	return len(evs), nil
}

// saveFailed catches s up after a conflict so that the next save can work.
func (e *Engine) saveFailed(ctx context.Context, s *session, err error) error {
	if errors.Is(err, eventlog.ErrConflict) {
		if cerr := e.catchUp(ctx, s); cerr != nil {
			return errors.Join(err, cerr)
		}
		if s.conv.Deleted { // by another process
			return deletion.Deleted(s.conv.ID)
		}
	}
	return err
}

// checkToolUses refuses an answer m that would make s a conversation the
// Messages API refuses: a tool_use without an id, an id s holds already,
// or an answer while calls of the one before it have no tool_result. s.mu
// must be held.
func (s *session) checkToolUses(m Message) error {
	if err := s.toolUses().CheckAfter(s.pending, m); err != nil {
		return fmt.Errorf("%w: session %s: %w", ErrInvalidMessage, s.conv.ID, err)
	}
	return nil
}

// view is what the stepper sees of s. s.mu must be held.
func (s *session) view() *lifecycle.Session {
	v := &lifecycle.Session{ID: s.conv.ID, Cwd: s.conv.Cwd, Head: s.conv.Head, Messages: len(s.conv.Messages),
		ViewLen: len(s.conv.Messages) - s.conv.ViewStart, LastUUID: s.conv.LastUUID(), Pending: s.pending,
		Deleted: s.conv.Deleted, Importing: s.conv.Importing, Subagent: s.conv.Subagent}
	v.Calls, v.OpenCalls, _ = projection.LastCalls(s.conv.Messages[s.conv.ViewStart:], s.pending)
	for i := len(s.conv.Messages) - 1; i >= 0; i-- {
		if m := &s.conv.Messages[i]; m.Role == "assistant" {
			v.LastAssistant, v.LastAnswer = projection.FirstText(*m), m.UUID
			break
		}
	}
	return v
}

// keepTranscript brings s's transcript file up to date after messages were
// written: always with Options.TranscriptOnSave, otherwise when hooks have
// been given the file (an injected reminder must be in it at once), or
// when force is set. s.mu must be held.
func (e *Engine) keepTranscript(s *session, force bool) {
	if !force && !e.transcriptOnSave && s.transcribed < 0 {
		return
	}
	if _, err := e.syncTranscript(s); err != nil {
		e.log.Warn("transcript not updated", "session", s.conv.ID, "error", err)
	}
}

// fold applies an event written to s, with its payload as written. A
// message is copied, so the conversation shares nothing with the caller.
// s.mu must be held.
func (s *session) fold(ev eventlog.Event, p schema.Payload) error {
	if m, ok := p.(*schema.MessageAppended); ok {
		p = &schema.MessageAppended{Message: projection.CloneMessages([]Message{m.Message})[0]}
	}
	return s.conv.ApplyDecoded(ev, p)
}

// dropPending drops the first n pending messages: they were written. s.mu
// must be held.
func (s *session) dropPending(n int) {
	s.pending = s.pending[n:]
	if len(s.pending) == 0 {
		s.pending = nil
	}
}

// message returns a copy of message uuid of session id.
func (e *Engine) message(ctx context.Context, id, uuid string) (Message, error) {
	s, err := e.session(ctx, id)
	if err != nil {
		return Message{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.conv.Messages) - 1; i >= 0; i-- {
		if m := s.conv.Messages[i]; m.UUID == uuid {
			return projection.CloneMessages([]Message{m})[0], nil
		}
	}
	return Message{}, fmt.Errorf("%w: %s in %s", ErrMessageNotFound, uuid, id)
}

// Session returns what the Engine knows of session id without reading the
// whole log: its id, working directory, creation time and message count.
// LastRestored is left zero; Sessions fills it.
func (e *Engine) Session(ctx context.Context, id string) (projection.SessionInfo, error) {
	s, err := e.session(ctx, id)
	if err != nil {
		return projection.SessionInfo{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return projection.SessionInfo{ID: id, Cwd: s.conv.Cwd, Created: s.conv.Created, Messages: len(s.conv.Messages), Subagent: s.conv.Subagent}, nil
}

// Sessions returns every session of the store, deleted ones left out,
// with its message count and when an agent last restored it, ordered by
// creation. It reads the session index the store keeps, and the events
// appended since the index was last written; a store that keeps none
// (eventlog.Indexed) is read whole.
func (e *Engine) Sessions(ctx context.Context) ([]projection.SessionInfo, error) {
	rows, err := eventlog.ReadRows(ctx, e.store, projection.SessionIndex)
	if err != nil {
		return nil, err
	}
	return projection.Sessions(rows)
}

// Conversation returns a copy of session id's saved messages as the model
// sees them: after a compaction, the summary and what followed it.
func (e *Engine) Conversation(ctx context.Context, id string) ([]Message, error) {
	s, err := e.session(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return projection.CloneMessages(s.conv.View()), nil
}

// FullConversation returns a copy of every saved message of session id,
// including those a compaction replaced by its summary.
func (e *Engine) FullConversation(ctx context.Context, id string) ([]Message, error) {
	s, err := e.session(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return projection.CloneMessages(s.conv.Messages), nil
}

// Pending returns a copy of session id's messages not saved yet.
func (e *Engine) Pending(ctx context.Context, id string) ([]Message, error) {
	s, err := e.session(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.pending...), nil
}
