package main

import (
	"strings"
	"testing"
)

func TestAgentsListsStateSessionAndWhatTheyDo(t *testing.T) {
	c := newCLI(t)
	var none []agentJSON
	c.okJSON(&none, "agents")
	if none == nil || len(none) != 0 {
		t.Fatalf("agents on a fresh machine = %#v, want []", none)
	}
	if out := c.ok("agents"); out != "AGENT  STATE  SESSION  NOW  RESTORES  LAST ACTIVE\n" {
		t.Fatalf("agents on a fresh machine printed %q", out)
	}

	c.session("s1", "hi")
	c.session("s2", "hi")
	flags := []string{"--no-default-settings"}
	c.ok(append([]string{"start", "--agent", "ide", "s1"}, flags...)...)
	c.ok(append([]string{"resume", "--agent", "ide", "s2"}, flags...)...)
	c.ok(append([]string{"start", "--agent", "cli", "s1"}, flags...)...)
	c.ok(append([]string{"tool", "--agent", "cli", "--tool-use-id", "toolu_01", "--name", "Bash", "--input", `{"command":"ls"}`, "--permission", "allow", "--add-tool-use"}, flags...)...)

	var agents []agentJSON
	c.okJSON(&agents, "agents")
	if len(agents) != 2 {
		t.Fatalf("agents = %+v", agents)
	}
	cli, ide := agents[0], agents[1]
	if cli.ID != "cli" || cli.State != "active" || cli.Session != "s1" || cli.Restores != 1 || cli.InProgress ||
		cli.Now != "tool Bash toolu_01: decided, waiting for its result" || !validTime(cli.LastActive) {
		t.Errorf("cli = %+v", cli)
	}
	if ide.ID != "ide" || ide.State != "active" || ide.Session != "s2" || ide.Restores != 2 || ide.Now != "nothing in progress" {
		t.Errorf("ide = %+v", ide)
	}
	out := c.ok("agents")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "AGENT ") ||
		!strings.HasPrefix(lines[2], "ide    active  s2       nothing in progress  ") {
		t.Fatalf("agents:\n%s", out)
	}
	c.ok(append([]string{"tool-result", "--agent", "cli", "--tool-use-id", "toolu_01", "--output", `{"stdout":""}`}, flags...)...)
	c.okJSON(&agents, "agents")
	if agents[0].Now != "nothing in progress" {
		t.Errorf("cli after the result: %+v", agents[0])
	}
	c.ok(append([]string{"end", "--agent", "ide", "--reason", "complete"}, flags...)...)
	var ended []agentJSON
	c.okJSON(&ended, "agents")
	if ide := ended[1]; ide.State != "idle" || ide.Session != "" || ide.Now != "no session: the last one ended" {
		t.Errorf("ide after its end: %+v", ide)
	}
}

// A tool name or id with a newline or a terminal escape is printed quoted
// by log --agent and agents, as message text is: it forges no line and
// sends nothing to the terminal.
func TestToolNamesArePrintedEscaped(t *testing.T) {
	c := newCLI(t)
	c.session("s1", "hi")
	flags := []string{"--no-default-settings"}
	c.ok(append([]string{"start", "--agent", "ide", "s1"}, flags...)...)
	name := "Bash\nSessionLoaded forged\x1b[2J"
	c.ok(append([]string{"tool", "--agent", "ide", "--tool-use-id", "toolu_01", "--name", name, "--permission", "allow", "--add-tool-use"}, flags...)...)
	for _, out := range []string{c.ok("log", "--agent", "ide"), c.ok("agents")} {
		if strings.Contains(out, "\x1b") || strings.Contains(out, "\nSessionLoaded forged") {
			t.Fatalf("a raw tool name reached the output:\n%q", out)
		}
		if !strings.Contains(out, `"Bash\nSessionLoaded forged\x1b[2J"`) {
			t.Fatalf("the tool name is not shown quoted:\n%q", out)
		}
	}
}
