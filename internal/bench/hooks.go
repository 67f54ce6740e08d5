package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// httpHookBench is target 10: one PreToolUse with one http hook, run by
// the library's runner, against a bare POST of the same JSON body to the
// same server (F5), a server of the bench's own on 127.0.0.1 that answers
// {}.
var httpHookBench = Bench{
	Name: "http-hook",
	Rows: []Row{{Target: 10, Name: "http-hook", Figure: "PreToolUse with one http hook",
		Floor: "F5: bare POST of the same body, same server", Unit: PerOp, What: "call", Limit: 1.2}},
	Reps: 1000, QuickReps: 150,
	Open: openHTTPHook,
}

// promptHookBench is target 11: one PreToolUse with one prompt hook, run
// by the library's runner with an evaluator, against a bare call of the
// same evaluator with the same question (F6). The evaluator stands for the
// fastest model a host could ask: it POSTs the question as JSON to a
// server of the bench's own on 127.0.0.1, which answers at once with a
// fixed verdict, and reads the verdict out of the answer. Its target is
// informational: the floor is a model of the bench's making, and a real
// one, taking a thousand times longer, leaves the ratio at 1.
var promptHookBench = Bench{
	Name: "prompt-hook",
	Rows: []Row{{Target: 11, Name: "prompt-hook", Figure: "PreToolUse with one prompt hook",
		Floor: "F6: bare call of the same evaluator", Unit: PerOp, What: "call", Limit: 1.2, Informational: true}},
	Reps: 1000, QuickReps: 150,
	Open: openPromptHook,
}

// hookTool is the tool call the hook benches' PreToolUse hooks see.
func hookTool(dir string) hookexec.ToolInput {
	return hookexec.ToolInput{SessionID: "5b0e2b7c-7f43-4a55-9d3e-6c1f0a2b9e10", Cwd: dir,
		TranscriptPath: filepath.Join(dir, "5b0e2b7c-7f43-4a55-9d3e-6c1f0a2b9e10.jsonl"),
		ToolName:       "Bash", ToolInput: json.RawMessage(`{"command":"make"}`), ToolUseID: "toolu_000001"}
}

// preToolUse runs hook as the only PreToolUse hook of in, with x, and
// fails unless it ran and answered without deciding anything.
func preToolUse(ctx context.Context, x hookexec.Exec, hook hookexec.Hook, in hookexec.ToolInput) error {
	outcomes, d := x.PreToolUse(ctx, []hookexec.Hook{hook}, in, hookexec.CommandEnv{ProjectDir: in.Cwd})
	switch {
	case len(outcomes) != 1:
		return fmt.Errorf("PreToolUse gave %d outcomes for one hook", len(outcomes))
	case outcomes[0].Status != schema.HookOK:
		return fmt.Errorf("PreToolUse hook: %s: %s", outcomes[0].Status, outcomes[0].Error)
	case d.Decision != "":
		return fmt.Errorf("PreToolUse hook decided %s", d.Decision)
	}
	return nil
}

// hookServer is the benches' server on 127.0.0.1: it answers every POST
// with the same body and keeps the last body it was sent.
type hookServer struct {
	srv    *http.Server
	url    string
	mu     sync.Mutex
	answer []byte
	body   []byte
}

// startHookServer starts a server that answers every POST with answer.
func startHookServer(answer string) (*hookServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench server: %w", err)
	}
	s := &hookServer{url: "http://" + ln.Addr().String() + "/", answer: []byte(answer)}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *hookServer) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.body = body
	answer := s.answer
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(answer)
}

// last returns the last body the server was sent.
func (s *hookServer) last() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.body
}

func (s *hookServer) Close() error { return s.srv.Close() }

// keepAlive returns a client of its own that keeps its connections open
// between requests, as the runner's client for http hooks does: a client
// made for each request would connect each time.
func keepAlive() *http.Client {
	return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// postJSON POSTs body to url with client and returns the answer's body,
// read whole; an answer other than 200 is an error.
func postJSON(ctx context.Context, client *http.Client, url string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("answered %s", resp.Status)
	}
	return answer, nil
}

type httpHookRunner struct {
	server *hookServer
	exec   hookexec.Exec
	hook   hookexec.Hook
	in     hookexec.ToolInput
	client *http.Client
	body   []byte // what the hook POSTs, which the floor POSTs too
	n      int
}

func openHTTPHook(_ context.Context, env *Env) (Runner, error) {
	server, err := startHookServer("{}")
	if err != nil {
		return nil, err
	}
	return &httpHookRunner{
		server: server,
		exec:   hookexec.Exec{Logger: quiet},
		hook:   hookexec.Hook{Event: hookexec.PreToolUse, Source: "bench", Body: hookexec.HTTP{URL: server.url}},
		in:     hookTool(env.Dir),
		client: keepAlive(),
	}, nil
}

func (r *httpHookRunner) Close() error {
	r.client.CloseIdleConnections()
	return r.server.Close()
}

func (r *httpHookRunner) Run(ctx context.Context) ([]Sample, error) {
	var s Sample
	call := func() (err error) {
		s.Reprise.Time, err = timed(func() error { return preToolUse(ctx, r.exec, r.hook, r.in) })
		if err == nil && r.body == nil {
			r.body = r.server.last()
		}
		return err
	}
	floor := func() (err error) {
		if r.body == nil {
			return errors.New("the floor ran before the hook: it has no body to POST")
		}
		s.Floor.Time, err = timed(func() error { return r.post(ctx) })
		return err
	}
	if err := alternate(&r.n, floor, call); err != nil {
		return nil, err
	}
	s.Floor.Work, s.Reprise.Work = 1, 1
	return []Sample{s}, nil
}

// post is F5: the hook's body POSTed bare to its server, the answer read
// whole.
func (r *httpHookRunner) post(ctx context.Context) error {
	if _, err := postJSON(ctx, r.client, r.server.url, r.body); err != nil {
		return fmt.Errorf("bare POST: %w", err)
	}
	return nil
}

func (r *httpHookRunner) Note(string) string {
	return fmt.Sprintf("a POST of %d bytes to 127.0.0.1 answered with {}; the floor's client keeps its connection, as the hook's does", len(r.body))
}

// promptAnswer is the verdict the prompt bench's model gives.
const promptAnswer = `{"ok": true, "reason": "fine"}`

// modelRequest and modelResponse are what the prompt bench's evaluator
// sends its model and reads back.
type modelRequest struct {
	Model  string `json:"model,omitempty"`
	System string `json:"system"`
	Prompt string `json:"prompt"`
}

type modelResponse struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// promptModel is the prompt bench's model and its evaluator, which keeps
// the last question it was asked.
type promptModel struct {
	server *hookServer
	client *http.Client
	mu     sync.Mutex
	last   *hookexec.Question
}

// evaluate is the evaluator: the question POSTed to the model as JSON,
// the answer's text read out of the model's.
func (m *promptModel) evaluate(ctx context.Context, q hookexec.Question) (string, error) {
	m.mu.Lock()
	m.last = &q
	m.mu.Unlock()
	body, err := json.Marshal(modelRequest{Model: q.Model, System: q.System, Prompt: q.Prompt})
	if err != nil {
		return "", err
	}
	answer, err := postJSON(ctx, m.client, m.server.url, body)
	if err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	var resp modelResponse
	if err := json.Unmarshal(answer, &resp); err != nil || len(resp.Content) == 0 {
		return "", fmt.Errorf("model: an answer without content (%v)", err)
	}
	return resp.Content[0].Text, nil
}

// question returns the last question the evaluator was asked, nil for
// none.
func (m *promptModel) question() *hookexec.Question {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

type promptHookRunner struct {
	model *promptModel
	exec  hookexec.Exec
	hook  hookexec.Hook
	in    hookexec.ToolInput
	q     *hookexec.Question // what the hook asks, which the floor asks too
	n     int
}

func openPromptHook(_ context.Context, env *Env) (Runner, error) {
	answer, err := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": promptAnswer}}})
	if err != nil {
		return nil, err
	}
	server, err := startHookServer(string(answer))
	if err != nil {
		return nil, err
	}
	model := &promptModel{server: server, client: keepAlive()}
	return &promptHookRunner{
		model: model,
		exec:  hookexec.Exec{Logger: quiet, Evaluator: model.evaluate},
		hook: hookexec.Hook{Event: hookexec.PreToolUse, Source: "bench",
			Body: hookexec.Prompt{Text: "May this command run on a build machine? $ARGUMENTS"}},
		in: hookTool(env.Dir),
	}, nil
}

func (r *promptHookRunner) Close() error {
	r.model.client.CloseIdleConnections()
	return r.model.server.Close()
}

func (r *promptHookRunner) Run(ctx context.Context) ([]Sample, error) {
	var s Sample
	call := func() (err error) {
		s.Reprise.Time, err = timed(func() error { return preToolUse(ctx, r.exec, r.hook, r.in) })
		if err == nil && r.q == nil {
			r.q = r.model.question()
		}
		return err
	}
	floor := func() (err error) {
		if r.q == nil {
			return errors.New("the floor ran before the hook: it has no question to ask")
		}
		s.Floor.Time, err = timed(func() error {
			answer, err := r.model.evaluate(ctx, *r.q)
			if err == nil && answer != promptAnswer {
				err = fmt.Errorf("the evaluator answered %q", answer)
			}
			return err
		})
		return err
	}
	if err := alternate(&r.n, floor, call); err != nil {
		return nil, err
	}
	s.Floor.Work, s.Reprise.Work = 1, 1
	return []Sample{s}, nil
}

func (r *promptHookRunner) Note(string) string {
	n := 0
	if r.q != nil {
		n = len(r.q.Prompt)
	}
	return fmt.Sprintf("a question of %d bytes (its prompt), POSTed as JSON to 127.0.0.1, answered %s at once", n, promptAnswer)
}
