package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

// TestNotATerminal: neither a pipe nor /dev/null, which is a character
// device, nor a reader that is no file is a terminal.
func TestNotATerminal(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, in := range map[string]io.Reader{"/dev/null": null, "a pipe": r, "a strings.Reader": strings.NewReader("")} {
		if isTerminal(in) {
			t.Errorf("%s is taken for a terminal", name)
		}
	}
}

// TestNoPromptFromDevNull runs the agent with /dev/null as standard input,
// as a service or a job without a terminal has it: it prints no prompt
// sign.
func TestNoPromptFromDevNull(t *testing.T) {
	ev := setup(t)
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), ev.args(), null, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q, want nothing", stdout.String())
	}
}
