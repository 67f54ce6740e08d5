package testkit

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Child is a helper process: the test binary run again, whose TestMain
// finds its orders in the environment. It talks in lines on stdout.
type Child struct {
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser
	Lines  chan string // its stdout, line by line; closed at end of file
	Stderr *SyncBuffer
	Done   chan struct{} // closed once it has exited
	Err    error         // of Wait, once Done is closed
}

// lineTimeout bounds how long Line and Wait wait for a child.
const lineTimeout = time.Minute

// StartChild runs the test binary, running no tests, with env added to its
// environment. The process is killed when tb ends.
func StartChild(tb testing.TB, env ...string) *Child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	c := &Child{Cmd: cmd, Lines: make(chan string, 16), Stderr: &SyncBuffer{}, Done: make(chan struct{})}
	cmd.Stderr = c.Stderr
	var err error
	if c.Stdin, err = cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.Lines <- sc.Text()
		}
		close(c.Lines)
		c.Err = cmd.Wait()
		close(c.Done)
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		for range c.Lines {
		}
		<-c.Done
	})
	return c
}

// Line returns the child's next line of output, failing tb if there is
// none within a minute.
func (c *Child) Line(tb testing.TB) string {
	tb.Helper()
	select {
	case l, ok := <-c.Lines:
		if !ok {
			<-c.Done
			tb.Fatalf("helper process exited (%v) without a line; stderr:\n%s", c.Err, c.Stderr)
		}
		return l
	case <-time.After(lineTimeout):
		tb.Fatalf("no line from the helper process in a minute; stderr:\n%s", c.Stderr)
	}
	return ""
}

// Wait closes the child's stdin, which tells a holding child to let go,
// waits for it to exit and fails tb unless it succeeded.
func (c *Child) Wait(tb testing.TB) {
	tb.Helper()
	_ = c.Stdin.Close()
	select {
	case <-c.Done:
	case <-time.After(lineTimeout):
		tb.Fatalf("the helper process did not exit in a minute; stderr:\n%s", c.Stderr)
	}
	if c.Err != nil {
		tb.Fatalf("helper process: %v; stderr:\n%s", c.Err, c.Stderr)
	}
}

// SyncBuffer is a bytes.Buffer safe for concurrent writes, such as a
// child's output, and reads by the test.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
