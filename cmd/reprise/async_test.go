package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/internal/proctest"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/jsonview"
)

// asyncSettings writes a settings file whose one UserPromptSubmit hook is
// the "async" command hook command, and returns the flags of a command
// that runs with it alone, on agent ide.
func asyncSettings(c *cli, command string) []string {
	c.t.Helper()
	hook := map[string]any{"type": "command", "async": true, "command": command}
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{
		"UserPromptSubmit": []any{map[string]any{"hooks": []any{hook}}},
	}})
	return []string{"--agent", "ide", "--no-default-settings", "--settings", c.writeFile("async.json", string(b))}
}

// asyncRuns returns the ids of the async hook runs the agent's
// PromptHookRan events record, in order.
func asyncRuns(c *cli, agent string) []string {
	c.t.Helper()
	var ids []string
	for _, p := range agentEvents(c, agent, "PromptHookRan") {
		for _, o := range p["outcomes"].([]any) {
			if id, _ := o.(map[string]any)["async"].(string); id != "" {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// logLines returns the lines of reprise log --agent agent that record
// events of type typ.
func logLines(c *cli, agent, typ string) []string {
	c.t.Helper()
	var lines []string
	for line := range strings.Lines(c.ok("log", "--agent", agent)) {
		if f := strings.Fields(line); len(f) > 2 && f[2] == typ {
			lines = append(lines, line)
		}
	}
	return lines
}

// Killed with SIGKILL while an async hook runs, reprise takes the hook
// with it; the next command that loads the agent records the run as
// ended "interrupted", once, and the one after adds nothing.
func TestBinaryAsyncHookDiesWithReprise(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("s")
	flags := asyncSettings(c, "echo $$ > hook.pid; exec sleep 60")
	c.ok(append([]string{"start", "s"}, flags...)...)

	cmd, stderr, exited := c.startBinary(append([]string{"prompt", "hi"}, flags...)...)
	hook := proctest.WaitPid(t, filepath.Join(c.dir, "hook.pid"), stderr.String)
	// The prompt's step is recorded before the kill: the log, read through
	// the process that holds the store, shows the run.
	var runs []string
	for deadline := time.Now().Add(10 * time.Second); len(runs) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no async run recorded; stderr: %s", stderr.String())
		}
		runs = asyncRuns(c, "ide")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill prompt while its async hook runs: %v; stderr: %s", err, stderr.String())
	}
	<-exited
	proctest.AssertGone(t, map[string]int{"async hook": hook})

	c.ok("prompt", "--agent", "ide", "--no-default-settings", "again")
	c.ok("prompt", "--agent", "ide", "--no-default-settings", "and again")
	ended := logLines(c, "ide", "AsyncHookEnded")
	if len(runs) != 1 || len(ended) != 1 || !strings.Contains(ended[0], " async="+runs[0]+" ") ||
		!strings.Contains(ended[0], ":interrupted]") {
		t.Fatalf("async runs %v; their ends in the log:\n%s", runs, strings.Join(ended, ""))
	}
	if out := c.ok("audit"); !strings.HasPrefix(out, "ok: ") || !strings.Contains(out, "1 interrupted") {
		t.Fatalf("audit: %s", out)
	}
}

// prompt waits at its exit for the async hook its prompt started; the
// hook's context reaches the conversation with the next prompt, once, as
// a meta message right after it.
func TestBinaryAsyncHookContextReachesTheNextPrompt(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("s")
	flags := asyncSettings(c, `sleep 0.3; echo '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"CTX"}}'`)
	c.ok(append([]string{"start", "s"}, flags...)...)

	c.ok(append([]string{"prompt", "one"}, flags...)...)
	ended := logLines(c, "ide", "AsyncHookEnded")
	runs := asyncRuns(c, "ide")
	if len(runs) != 1 || len(ended) != 1 || !strings.Contains(ended[0], " async="+runs[0]+" ") ||
		!strings.Contains(ended[0], ":ok]") || !strings.Contains(ended[0], ` context="CTX"`) {
		t.Fatalf("after prompt one, async runs %v; their ends in the log:\n%s", runs, strings.Join(ended, ""))
	}

	c.ok(append([]string{"prompt", "two"}, flags...)...)
	var conv conversationJSON
	c.okJSON(&conv, "replay", "s")
	var texts []string
	for _, m := range conv.Messages {
		text := m.Content[0].(map[string]any)["text"].(string)
		if m.Meta {
			text = "meta: " + text
		}
		texts = append(texts, text)
	}
	want := "one | two | meta: <system-reminder>\nUserPromptSubmit hook additional context: CTX\n</system-reminder>"
	if got := strings.Join(texts, " | "); got != want {
		t.Fatalf("conversation = %q, want %q", got, want)
	}
	injected := agentEvents(c, "ide", "AsyncContextInjected")
	if len(injected) != 1 || injected[0]["message"] != conv.Messages[2].UUID {
		t.Fatalf("AsyncContextInjected events %v, want one naming message %s", injected, conv.Messages[2].UUID)
	}
	if got := injected[0]["runs"].([]any); len(got) != 1 || got[0] != runs[0] {
		t.Fatalf("injected the context of runs %v, want [%s]", got, runs[0])
	}

	// Prompt two started the hook again, and waited for it at exit; the
	// model's next answer calls a tool, and that call's result, the last
	// of the answer, brings the run's context before the next request.
	c.ok("append", "s", "--role", "assistant", "--content", `[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]`)
	c.ok(append([]string{"tool", "--tool-use-id", "toolu_1", "--name", "Bash", "--input", `{"command":"ls"}`, "--permission", "allow"}, flags...)...)
	var f jsonview.ToolFeedback
	c.okJSON(&f, append([]string{"tool-result", "--tool-use-id", "toolu_1", "--output", `"go.mod"`}, flags...)...)
	c.okJSON(&conv, "replay", "s")
	last := conv.Messages[len(conv.Messages)-1]
	if f.AsyncMessage == "" || f.AsyncMessage != last.UUID || !last.Meta ||
		last.Content[0].(map[string]any)["text"] != "<system-reminder>\nUserPromptSubmit hook additional context: CTX\n</system-reminder>" {
		t.Fatalf("tool-result = %+v; the conversation ends with %+v", f, last)
	}
	if n := len(agentEvents(c, "ide", "AsyncContextInjected")); n != 2 {
		t.Fatalf("%d AsyncContextInjected events, want 2", n)
	}
}

// prompt prints what became of the prompt before it waits for the async
// hooks the prompt started.
func TestBinaryPromptAnswersBeforeWaitingForAsyncHooks(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("s")
	release := filepath.Join(c.dir, "release")
	flags := asyncSettings(c, "while [ ! -e release ]; do sleep 0.05; done")
	c.ok(append([]string{"start", "s"}, flags...)...)

	cmd := c.command(append([]string{"prompt", "hi"}, flags...)...)
	stdout, stderr := new(testkit.SyncBuffer), new(testkit.SyncBuffer)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	for deadline := time.Now().Add(5 * time.Second); !strings.HasPrefix(stdout.String(), "kept as message "); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("prompt printed %q in 5 s while its async hook ran; stderr: %s", stdout.String(), stderr.String())
		}
	}
	select {
	case err := <-exited:
		t.Fatalf("prompt exited (%v) while its async hook ran", err)
	default:
	}
	testkit.WriteFile(t, release, "")
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("prompt: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("prompt did not exit within 10 s of its async hook's end")
	}
	if ended := logLines(c, "ide", "AsyncHookEnded"); len(ended) != 1 || !strings.Contains(ended[0], ":ok]") {
		t.Fatalf("the async hook's end in the log:\n%s", strings.Join(ended, ""))
	}
}
