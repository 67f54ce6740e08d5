package main

import (
	"io"
	"strings"
	"syscall"
	"testing"
	"time"
)

// import - reads its input before it takes the store: while it waits for
// the input, other writers go on, where they used to fail after the lock
// timeout.
func TestImportFromAPipeKeepsNoWriterOut(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("before")
	cmd := c.command("import", "-", "--id", "piped")
	pipe, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	time.Sleep(300 * time.Millisecond) // the import would have taken the store by now
	if r := c.run("--lock-timeout", "200ms", "new", "--id", "meanwhile"); r.code != exitOK {
		t.Errorf("a writer while import - waits for its input: exit %d, %s", r.code, r.stderr)
	}
	transcript := `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"x","message":{"role":"user","content":"hello"}}` + "\n"
	if _, err := io.WriteString(pipe, transcript); err != nil {
		t.Fatal(err)
	}
	pipe.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("import -: %v\n%s", err, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "piped: 1 message(s)") {
		t.Errorf("import - printed %q", stdout.String())
	}
	out := c.ok("sessions")
	for _, id := range []string{"before", "meanwhile", "piped"} {
		if !strings.Contains(out, id) {
			t.Errorf("sessions lacks %s:\n%s", id, out)
		}
	}
}

// Interrupted while it waits for its input, import - says that nothing
// was imported, and nothing was.
func TestImportInterruptedWhileReadingItsInput(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("before")
	cmd := c.command("import", "-", "--id", "piped")
	pipe, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if _, err := io.WriteString(pipe, `{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"hello"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(stderr.String(), "interrupted while reading -; nothing was imported") {
		t.Errorf("import - interrupted while reading: %v, %s", err, stderr.String())
	}
	if out := c.ok("sessions"); strings.Contains(out, "piped") {
		t.Errorf("an import interrupted while reading its input recorded a session:\n%s", out)
	}
}
