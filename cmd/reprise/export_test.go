//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mkfifo makes a FIFO named name in dir and returns its path.
func mkfifo(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// privateTemp points TMPDIR, which export spools into, at a directory of
// the test's own, and returns it.
func privateTemp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	return dir
}

// assertEmpty fails the test unless dir has no entries.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("%s holds %v (%v); want nothing", dir, entries, err)
	}
}

// An export to a FIFO that nobody reads does not hold the store while it
// waits: another process appends meanwhile. The first SIGTERM ends the
// wait, with exit code 143, and no spooled copy stays behind.
func TestBinaryExportWaitingForAFIFOReaderLeavesTheStoreFree(t *testing.T) {
	c := newBinaryCLI(t)
	spool := privateTemp(t)
	c.session("s", "hello")
	fifo := mkfifo(t, c.dir, "fifo")
	cmd, stderr, exited := c.startBinary("export", "s", "-o", fifo)

	// Time for the export to open the store and reach the FIFO; the
	// append then waits up to 3 s for the store.
	time.Sleep(300 * time.Millisecond)
	if r := c.run("append", "s", "--role", "user", "--lock-timeout", "3s", "meanwhile"); r.code != exitOK {
		t.Fatalf("append while export waits for a reader: exit %d, %s", r.code, r.stderr)
	}
	select {
	case err := <-exited:
		t.Fatalf("export ended before it had a reader: %v, %s", err, stderr.String())
	default:
	}
	assertEmpty(t, spool)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("export did not exit within 5 s of SIGTERM")
	}
	want := "reprise: interrupted while waiting for a reader of the FIFO " + fifo + "; nothing was written\n"
	if code := cmd.ProcessState.ExitCode(); code != 143 || stderr.String() != want {
		t.Fatalf("exit %d, stderr %q; want 143, %q", code, stderr.String(), want)
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("the FIFO was replaced: %v, %v", info, err)
	}
	assertEmpty(t, spool)
	if out := c.ok("export", "s"); !strings.Contains(out, "meanwhile") {
		t.Errorf("the append made while export waited is not in the session:\n%s", out)
	}
}

// A reader that comes after the export started waiting gets the whole
// transcript, larger than a pipe holds, through the FIFO.
func TestBinaryExportToAFIFOReachesALateReader(t *testing.T) {
	c := newBinaryCLI(t)
	spool := privateTemp(t)
	file := filepath.Join(c.dir, "big.jsonl")
	writeTranscript(t, file, 1<<20)
	c.ok("import", file, "--id", "big")
	want := c.ok("export", "big")
	fifo := mkfifo(t, c.dir, "fifo")

	cmd := c.command("--json", "export", "big", "-o", fifo)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	time.Sleep(200 * time.Millisecond)
	opened := make(chan *os.File, 1)
	go func() {
		f, err := os.Open(fifo) // waits for the writer
		if err != nil {
			t.Error(err)
		}
		opened <- f
	}()
	var reader *os.File
	select {
	case reader = <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("export did not open the FIFO within 10 s of its reader")
	}
	if reader == nil {
		t.FailNow()
	}
	defer reader.Close()
	got, err := io.ReadAll(reader)
	if err != nil || string(got) != want {
		t.Fatalf("the reader got %d bytes, %v; want the %d of export to stdout", len(got), err, len(want))
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("export: %v", err)
	}
	var rep struct{ Bytes int }
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil || rep.Bytes != len(want) {
		t.Errorf("export --json printed %q; want bytes %d", stdout.String(), len(want))
	}
	assertEmpty(t, spool)
}

// An export whose FIFO reader has stopped reading stops at the first
// SIGTERM, though its write waits for room in the pipe.
func TestBinaryExportToAStalledFIFOReaderStopsOnSIGTERM(t *testing.T) {
	c := newBinaryCLI(t)
	privateTemp(t)
	file := filepath.Join(c.dir, "big.jsonl")
	writeTranscript(t, file, 1<<20)
	c.ok("import", file, "--id", "big")
	fifo := mkfifo(t, c.dir, "fifo")
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()

	cmd, stderr, exited := c.startBinary("export", "big", "-o", fifo)
	time.Sleep(300 * time.Millisecond) // the pipe fills, and the export waits
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("export did not exit within 5 s of SIGTERM")
	}
	prefix := "reprise: interrupted while writing to " + fifo + ", after "
	if code := cmd.ProcessState.ExitCode(); code != 143 || !strings.HasPrefix(stderr.String(), prefix) {
		t.Fatalf("exit %d, stderr %q; want 143, %q...", code, stderr.String(), prefix)
	}
}

// A path that names a descriptor the process has open is written at the
// descriptor's position, even when it is a regular file: /dev/stdout with
// stdout redirected to a file, /dev/fd/N and /proc/self/fd/N. One that
// is not open fails.
func TestBinaryExportToAnOpenDescriptor(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("s", "hello", "hi")
	want := c.ok("export", "s")
	for _, tc := range []struct{ path, stream string }{
		{"/dev/stdout", "stdout"},
		{"/dev/stderr", "stderr"},
		{"/dev/fd/1", "stdout"},
		{"/proc/self/fd/3", "fd 3"},
		{"/dev/fd/../fd/3", "fd 3"},
	} {
		file := filepath.Join(t.TempDir(), "out.jsonl")
		f, err := os.Create(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("before\n"); err != nil {
			t.Fatal(err)
		}
		cmd := c.command("export", "s", "-o", tc.path)
		var said strings.Builder
		cmd.Stdout, cmd.Stderr = &said, &said
		switch tc.stream {
		case "stdout":
			cmd.Stdout = f
		case "stderr":
			cmd.Stderr = f
		default:
			cmd.ExtraFiles = []*os.File{f}
		}
		err = cmd.Run()
		f.Close()
		if err != nil || said.Len() != 0 {
			t.Errorf("export -o %s: %v, %s", tc.path, err, said.String())
			continue
		}
		if got, err := os.ReadFile(file); err != nil || string(got) != "before\n"+want {
			t.Errorf("export -o %s with %s redirected to a file: the file holds %q, %v; want %q after its first line", tc.path, tc.stream, got, err, want)
		}
		if info, err := os.Lstat(file); err != nil || !info.Mode().IsRegular() {
			t.Errorf("export -o %s replaced the file: %v, %v", tc.path, info, err)
		}
	}
	r := c.fails(exitFailure, "export", "s", "-o", "/dev/fd/9")
	if !strings.Contains(r.stderr, "/dev/fd/9 names descriptor 9, which is not open") {
		t.Errorf("export to a descriptor that is not open said %q", r.stderr)
	}
}

// A symbolic link that leads nowhere is refused, as one that leads to a
// regular file is: the link stays, and nothing is made where it leads.
func TestExportRefusesADanglingLink(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hello")
	dir := c.mkdir("out")
	nowhere := filepath.Join(dir, "nowhere.jsonl")
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(nowhere, link); err != nil {
		t.Fatal(err)
	}
	r := c.fails(exitFailure, "export", "s", "-o", link)
	if !strings.Contains(r.stderr, link+" is a symbolic link to nothing") {
		t.Errorf("export to a dangling link said %q", r.stderr)
	}
	if dest, err := os.Readlink(link); err != nil || dest != nowhere {
		t.Errorf("the link was replaced: %q, %v", dest, err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Errorf("export left %v in %s (%v); want the link alone", entries, dir, err)
	}
}

func TestExportIntoAMissingDirectorySaysSoWithoutItsTemporaryFile(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hi")
	missing := filepath.Join(c.dir, "nodir")
	r := c.fails(exitFailure, "export", "s", "-o", filepath.Join(missing, "s.jsonl"))
	want := "reprise: cannot write " + filepath.Join(missing, "s.jsonl") + ": the directory " + missing + " does not exist\n"
	if r.stderr != want || strings.Contains(r.stderr, ".tmp") {
		t.Fatalf("stderr = %q, want %q", r.stderr, want)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("export made the directory: %v", err)
	}
	// The store's own errors are not taken for the file's.
	r = c.fails(exitFailure, "export", "nosuch", "-o", filepath.Join(c.dir, "n.jsonl"))
	if r.stderr != "reprise: session not found: nosuch\n" {
		t.Fatalf("stderr = %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "n.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a failed export left its file: %v", err)
	}
}
