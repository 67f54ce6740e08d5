package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/api"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/turn"
)

// apiBench is targets 13 and 14: the write API on a Unix socket against
// the same work in process, on the same Engine, the two sides taking
// turns: a runtime restore with one command hook (the peer is
// Agent.Restore), and a durable turn of one tool call over the turn
// protocol, four steps (the peer is turn.Runner.Run, its model and tool
// functions answering at once), the host keeping each session's
// conversation as the Runner's model has it, so that each ask gives only
// what is new.
var apiBench = Bench{
	Name: "api",
	Rows: []Row{
		{Target: 13, Name: "api-restore", Figure: "runtime restore, one command hook, through the write API's socket",
			Floor: "the same restore in process", Unit: PerOp, What: "restore", Limit: 1.3},
		{Target: 14, Name: "api-turn", Figure: "a turn with one tool call, a step at a time through the socket",
			Floor: "turn.Runner.Run in process", Unit: PerOp, What: "turn", Limit: 1.3},
	},
	Reps: 40, QuickReps: 8,
	Open: openAPI,
}

type apiRunner struct {
	dir, sockDir string
	e            *reprise.Engine
	store        *countingStore
	srv          *http.Server
	host         *hostConn
	direct, wire *reprise.Agent
	sessions     map[string][2]string // each agent's two sessions
	kept         map[string]keptConv  // what the wire host keeps of each session's conversation
	n, calls     int
}

func openAPI(ctx context.Context, env *Env) (Runner, error) {
	dir, err := mkdir(env, "api")
	if err != nil {
		return nil, err
	}
	r := &apiRunner{dir: dir, sessions: map[string][2]string{}, kept: map[string]keptConv{}}
	if err := r.setup(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *apiRunner) setup(ctx context.Context) error {
	hooks := hookexec.NewRegistry()
	if err := hooks.Add(hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.Command{Line: hookCommand}, Source: "bench"}); err != nil {
		return err
	}
	var err error
	if r.e, r.store, err = engineAt(filepath.Join(r.dir, "reprise.db"), false, hooks); err != nil {
		return err
	}
	// A socket's path is short: under the system's temporary directory.
	if r.sockDir, err = os.MkdirTemp("", "reprise-bench-"); err != nil {
		return err
	}
	socket := filepath.Join(r.sockDir, "api.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	r.srv = &http.Server{Handler: api.New(r.e, api.Options{Logger: quiet})}
	go r.srv.Serve(ln)
	conn, err := (&net.Dialer{}).DialContext(ctx, "unix", socket)
	if err != nil {
		return err
	}
	r.host = &hostConn{conn: conn, in: bufio.NewReader(conn)}
	for _, name := range []string{"direct", "wire"} {
		var ids [2]string
		for i := range ids {
			if ids[i], err = r.e.CreateSession(ctx, "", r.dir); err != nil {
				return err
			}
			// Ending on a user message: no turn waits on its Stop.
			for j := range restoreMessages - 1 {
				if _, err := r.e.Buffer(ctx, ids[i], message(j)); err != nil {
					return err
				}
			}
			if _, err := r.e.Save(ctx, ids[i]); err != nil {
				return err
			}
		}
		r.sessions[name] = ids
		a, err := r.e.Agent(ctx, name)
		if err != nil {
			return err
		}
		if _, err := a.Start(ctx, ids[0]); err != nil {
			return err
		}
		if name == "direct" {
			r.direct = a
		} else {
			r.wire = a
		}
	}
	return nil
}

func (r *apiRunner) Close() error {
	var err error
	if r.host != nil {
		err = r.host.conn.Close()
	}
	if r.srv != nil {
		err = errors.Join(err, r.srv.Close())
	}
	if r.sockDir != "" {
		err = errors.Join(err, os.RemoveAll(r.sockDir))
	}
	return errors.Join(err, teardown(r.dir, r.e, nil))
}

// other is the session of agent a's two that is not its current one.
func (r *apiRunner) other(a *reprise.Agent) string {
	ids := r.sessions[a.ID()]
	if a.Current() == ids[0] {
		return ids[1]
	}
	return ids[0]
}

// hostConn is the host's side of the socket as the TypeScript and
// Python clients have it: one connection kept open, each request written
// and its answer read by the caller, one at a time. (Go's http.Client
// hands each request to a writing and a reading goroutine of its own:
// on an idle machine every such handoff waits for a thread to wake, a
// cost of that client, not of the API.)
type hostConn struct {
	conn net.Conn
	in   *bufio.Reader
}

// post sends body to path and decodes the answer into out, failing on a
// status that is not 200.
func (r *apiRunner) post(ctx context.Context, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", "http://localhost"+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if err := req.Write(r.host.conn); err != nil {
		return err
	}
	res, err := http.ReadResponse(r.host.in, req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %d %s", path, res.StatusCode, answer)
	}
	return json.Unmarshal(answer, out)
}

// wireStep is the part of a turn step's answer the bench reads.
type wireStep struct {
	Step     string            `json:"step"`
	Session  string            `json:"session"`
	Messages []json.RawMessage `json:"messages"`
	Since    string            `json:"since"`
	After    string            `json:"after"`
	Calls    []struct {
		ID string `json:"tool_use_id"`
	} `json:"calls"`
}

// keptConv is a session's conversation as a host keeps it between asks:
// the messages it was given, up to the last one, after.
type keptConv struct {
	after    string
	messages []json.RawMessage
}

// keep adds what an ask gave to the conversation the wire host keeps, as
// a host does that is given only what is new (since).
func (r *apiRunner) keep(st wireStep) error {
	k := r.kept[st.Session]
	switch st.Since {
	case "":
		k.messages = st.Messages
	case k.after:
		k.messages = append(k.messages, st.Messages...)
	default:
		return fmt.Errorf("an ask since %s, which the host did not give", st.Since)
	}
	k.after = st.After
	r.kept[st.Session] = k
	return nil
}

func (r *apiRunner) Run(ctx context.Context) ([]Sample, error) {
	var restore, turnStep Sample
	r.calls++
	callID := fmt.Sprintf("toolu_bench_%d", r.calls)
	useAnswer := func(id string) reprise.Message {
		raw, _ := json.Marshal(map[string]any{"type": "tool_use", "id": id, "name": "Echo", "input": map[string]string{"text": "hi"}}) // always marshals
		return reprise.Message{Role: "assistant", Content: []reprise.Block{{Type: "tool_use", Raw: raw}}}
	}
	direct := func() error {
		d, err := timed(func() error {
			_, err := r.direct.Restore(ctx, r.other(r.direct))
			return err
		})
		restore.Floor.Time = d
		if err != nil {
			return err
		}
		answers := []reprise.Message{useAnswer(callID + "d"), reprise.Text("assistant", "done")}
		runner := &turn.Runner{Engine: r.e, Agent: r.direct,
			Model: func(context.Context, []reprise.Message) (reprise.Message, error) {
				m := answers[0]
				answers = answers[1:]
				return m, nil
			},
			Tools: map[string]turn.Tool{"Echo": {Run: func(context.Context, turn.Call) (reprise.ToolResult, error) {
				return reprise.ToolResult{Output: json.RawMessage(`"hi"`)}, nil
			}}},
			Permission: func(turn.Call) string { return hookexec.Allow }}
		turnStep.Floor.Time, err = timed(func() error {
			_, err := runner.Run(ctx, "say hi")
			return err
		})
		return err
	}
	wire := func() error {
		var out map[string]any
		d, err := timed(func() error {
			return r.post(ctx, "/api/agents/wire/resume", map[string]string{"session": r.other(r.wire)}, &out)
		})
		restore.Reprise.Time = d
		if err != nil {
			return err
		}
		turnStep.Reprise.Time, err = timed(func() error {
			var st wireStep
			session := r.wire.Current()
			if err := r.post(ctx, "/api/agents/wire/turn", map[string]string{"prompt": "say hi", "permission": "allow", "since": r.kept[session].after}, &st); err != nil {
				return err
			}
			if err := r.keep(st); err != nil {
				return err
			}
			use := map[string]any{"content": []json.RawMessage{useAnswer(callID + "w").Content[0].Raw}}
			if err := r.post(ctx, "/api/agents/wire/turn", map[string]any{"answer": use, "after": st.After, "permission": "allow"}, &st); err != nil {
				return err
			}
			if st.Step != "tools" || len(st.Calls) != 1 {
				return fmt.Errorf("the turn's second step is %s with %d calls, want one call to run", st.Step, len(st.Calls))
			}
			results := []map[string]any{{"tool_use_id": st.Calls[0].ID, "output": "hi"}}
			if err := r.post(ctx, "/api/agents/wire/turn", map[string]any{"results": results, "since": r.kept[session].after}, &st); err != nil {
				return err
			}
			if err := r.keep(st); err != nil {
				return err
			}
			if err := r.post(ctx, "/api/agents/wire/turn", map[string]any{"answer": map[string]any{"content": "done"}, "after": st.After}, &st); err != nil {
				return err
			}
			if st.Step != "over" {
				return fmt.Errorf("the turn's last step is %s, want over", st.Step)
			}
			return nil
		})
		return err
	}
	if err := alternate(&r.n, direct, wire); err != nil {
		return nil, err
	}
	restore.Floor.Work, restore.Reprise.Work = 1, 1
	turnStep.Floor.Work, turnStep.Reprise.Work = 1, 1
	return []Sample{restore, turnStep}, nil
}

func (r *apiRunner) Note(string) string {
	return "both sides on one Engine, the write API on a Unix socket, the host on one connection, writing each request and reading its answer itself; a turn is four steps over it, the host keeping each conversation and given only what is new (since)"
}
