package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/internal/testkit"
)

// everyRecord is a Claude Code transcript with every record and block
// type, relative to this package.
var everyRecord = filepath.Join("..", "..", "testdata", "transcripts", "every-record.jsonl")

func TestImportExportRoundTrip(t *testing.T) {
	c := newCLI(t)
	path := testkit.Abs(t, everyRecord)
	original, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := c.ok("import", path, "--id", "imported")
	if out != "imported: 6 message(s), 6 other record(s), 0 skipped line(s), 3478 bytes\n" {
		t.Fatalf("import printed %q", out)
	}
	if got := c.ok("export", "imported"); got != string(original) {
		t.Fatalf("export differs from the imported file:\n%s", got)
	}

	// From stdin, as JSON, working in the current directory; the
	// transcript's cwd is kept for the record.
	r := c.runIn(bytes.NewReader(original), "--json", "import", "-")
	var rep importJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != exitOK || err != nil {
		t.Fatalf("import -: %d %v %s %s", r.code, err, r.stdout, r.stderr)
	}
	if rep.Messages != 6 || rep.Records != 6 || len(rep.Skipped) != 0 || rep.Bytes != int64(len(original)) || !uuidRE.MatchString(rep.Session+"\n") {
		t.Fatalf("import --json = %+v", rep)
	}
	var list []sessionJSON
	c.okJSON(&list, "sessions")
	if len(list) != 2 || list[1].Cwd != c.dir || list[1].ImportedCwd != "/src/payments" || list[1].Messages != 6 {
		t.Fatalf("sessions = %+v", list)
	}

	// -o writes the file, replacing an existing one and keeping its mode.
	file := c.writeFile("out/exported.jsonl", "old contents")
	if err := os.Chmod(file, 0o640); err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Session, File string
		Bytes         int64
	}
	c.okJSON(&exp, "export", rep.Session, "-o", file)
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, original) || exp.Bytes != int64(len(original)) || exp.File != file {
		t.Fatalf("export -o: %+v %v\n%s", exp, err, got)
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode = %v", st.Mode())
	}
	if entries, _ := os.ReadDir(filepath.Dir(file)); len(entries) != 1 {
		t.Fatalf("export left files behind: %v", entries)
	}

	// Appending, then export, import, export is byte-stable.
	c.ok("append", "imported", "--role", "user", "thanks")
	once := c.ok("export", "imported")
	if !strings.HasPrefix(once, string(original)) || strings.Count(once, "\n") != 13 {
		t.Fatalf("export after append:\n%s", once)
	}
	c.runIn(strings.NewReader(once), "import", "--id", "again", "-")
	if twice := c.ok("export", "again"); twice != once {
		t.Fatalf("export, import, export changed bytes:\n%s\nvs\n%s", once, twice)
	}

	c.fails(exitFailure, "import", path, "--id", "imported") // exists
	c.fails(exitFailure, "import", filepath.Join(c.dir, "missing.jsonl"))
	c.fails(exitFailure, "export", "nope")
	c.fails(exitFailure, "export", "imported", "-o", filepath.Join(c.dir, "no-such-dir", "x.jsonl"))
}

func TestImportMalformedLines(t *testing.T) {
	c := newCLI(t)
	file := c.writeFile("loose.jsonl", `{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","cwd":"/src/x"}
not json at all
[1,2]

{"type":"summary","summary":"s"}
{"truncated":
`)
	r := c.run("--json", "import", file, "--id", "loose", "--cwd", "elsewhere")
	if r.code != exitOK {
		t.Fatalf("import: %d %s", r.code, r.stderr)
	}
	var rep importJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, s := range rep.Skipped {
		lines = append(lines, s.Line)
	}
	if rep.Messages != 1 || rep.Records != 1 || len(lines) != 3 || lines[0] != 2 || lines[1] != 3 || lines[2] != 6 {
		t.Fatalf("import --json = %+v", rep)
	}
	for _, n := range []string{"line 2 skipped", "line 3 skipped", "line 6 skipped"} {
		if !strings.Contains(r.stderr, "reprise: warning: "+file+": "+n) {
			t.Errorf("stderr lacks %q:\n%s", n, r.stderr)
		}
	}
	var conv conversationJSON
	c.okJSON(&conv, "replay", "loose")
	if conv.Cwd != filepath.Join(c.dir, "elsewhere") {
		t.Fatalf("cwd = %q", conv.Cwd)
	}

	r = c.fails(exitFailure, "import", file, "--id", "strict", "--strict")
	if !strings.Contains(r.stderr, "bad transcript line 2") {
		t.Fatalf("--strict: %s", r.stderr)
	}
}

// A file with no transcript record in it fails and records nothing.
func TestImportOfAFileThatIsNotATranscript(t *testing.T) {
	c := newCLI(t)
	c.session("other") // so that the store exists
	for name, data := range map[string]string{
		"empty.jsonl": "",
		"README.md":   "# reprise\n\nreprise is a Go library.\n",
		"binary":      "\x7fELF\x02\x01\x01\x00\n\x00\x00\x03\x00",
		"object.json": "{}\n",
		"config.json": "{\"hooks\": {}}\n",
	} {
		file := c.writeFile(name, data)
		r := c.fails(exitFailure, "import", file, "--id", "imported")
		if !strings.Contains(r.stderr, file+": not a Claude Code transcript: ") || strings.Contains(r.stderr, "warning") || r.stdout != "" {
			t.Errorf("import %s: stdout %q, stderr %q", name, r.stdout, r.stderr)
		}
		if out := c.ok("sessions"); strings.Contains(out, "imported") {
			t.Errorf("import %s recorded a session:\n%s", name, out)
		}
		if r := c.runIn(strings.NewReader(data), "import", "-"); r.code != exitFailure || !strings.Contains(r.stderr, "-: not a Claude Code transcript") {
			t.Errorf("import - of %s: %d %s", name, r.code, r.stderr)
		}
	}
	if out := c.ok("sessions", "--json"); strings.Count(out, `"id"`) != 1 {
		t.Fatalf("sessions after failed imports: %s", out)
	}
}

// cancelAfter reads r and calls cancel once n bytes have been read.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	if c.n -= k; c.n <= 0 {
		c.cancel()
	}
	return k, err
}

// An import interrupted part way names the session that stays, with what
// it holds, and says how to remove it and import again.
func TestInterruptedImportSaysWhatIsLeft(t *testing.T) {
	c := newCLI(t)
	file := filepath.Join(c.dir, "big.jsonl")
	lines, size := writeTranscript(t, file, 4<<20)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	in := &cancelAfter{r: bytes.NewReader(data), n: int(size / 2), cancel: cancel}
	code := run(ctx, []string{"import", "--id", "big", "-"}, in, &stdout, &stderr)
	m := regexp.MustCompile(`^reprise: interrupted: the import stopped part way, and session big holds its first (\d+) message\(s\); ` +
		`finish it with reprise import --resume --id big -, or delete it with reprise rm big\n$`).FindStringSubmatch(stderr.String())
	if code != exitFailure || m == nil {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	var sessions []sessionJSON
	c.okJSON(&sessions, "sessions")
	if n, _ := strconv.Atoi(m[1]); len(sessions) != 1 || sessions[0].Messages != n || n == 0 || n >= lines {
		t.Fatalf("sessions %+v; the message says %s of %d message(s)", sessions, m[1], lines)
	}
	// What the message says to do works.
	c.ok("import", "--resume", "--id", "big", file)
	c.okJSON(&sessions, "sessions")
	if len(sessions) != 1 || sessions[0].Messages != lines {
		t.Fatalf("sessions after import --resume: %+v; want big with %d message(s)", sessions, lines)
	}
}

// writeTranscript writes a Claude Code transcript of at least size bytes,
// alternating user and assistant messages of about 1 KB, and returns its
// number of lines and its size.
func writeTranscript(t *testing.T, path string, size int64) (int, int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	text := strings.Repeat("The ledger races under load; add a lock. ", 25)
	var n int
	var written int64
	for parent := "null"; written < size; n++ {
		var k int
		if n%2 == 0 {
			k, err = fmt.Fprintf(w, `{"parentUuid":%s,"isSidechain":false,"userType":"external","cwd":"/src/app","sessionId":"big","type":"user","message":{"role":"user","content":"%d %s"},"uuid":"m%d","timestamp":"2026-11-20T10:00:00.000Z"}`+"\n", parent, n, text, n)
		} else {
			k, err = fmt.Fprintf(w, `{"parentUuid":%s,"isSidechain":false,"userType":"external","cwd":"/src/app","sessionId":"big","type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"%d %s"}]},"uuid":"m%d","timestamp":"2026-11-20T10:00:01.000Z"}`+"\n", parent, n, text, n)
		}
		if err != nil {
			t.Fatal(err)
		}
		written += int64(k)
		parent = fmt.Sprintf(`"m%d"`, n)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return n, written
}

// TestStrictImportSaysWhichLineAndHowToGoOn checks what a strict import
// stopped by a bad line says: the file and the line, and when earlier
// batches were written, what the session holds and the commands that
// finish or delete it; a resume without --strict then finishes it.
func TestStrictImportSaysWhichLineAndHowToGoOn(t *testing.T) {
	c := newCLI(t)
	var b strings.Builder
	for i := range 1500 {
		fmt.Fprintf(&b, `{"type":"user","uuid":"u%d","message":{"role":"user","content":"m%d"}}`+"\n", i, i)
	}
	b.WriteString("garbage\n")
	path := c.writeFile("t.jsonl", b.String())
	r := c.fails(exitFailure, "import", "--strict", "--id", "big", path)
	for _, want := range []string{path + ": bad transcript line 1501: not valid JSON", "session big holds its first 1000 message(s)",
		"reprise import --resume --id big " + path, "reprise rm big"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("strict import's error lacks %q:\n%s", want, r.stderr)
		}
	}
	c.ok("import", "--resume", "--id", "big", path)
	small := c.writeFile("small.jsonl", "garbage\n"+`{"type":"summary"}`+"\n")
	if r := c.fails(exitFailure, "import", "--strict", "--id", "small", small); !strings.Contains(r.stderr, small+": bad transcript line 1: not valid JSON; nothing was imported") {
		t.Errorf("strict import of a first bad line: %s", r.stderr)
	}
}

// An import that fails into a store it creates, --resume or not, leaves
// no store behind; one that fails into an existing store leaves it as it
// was.
func TestAFailedImportCreatesNoStore(t *testing.T) {
	c := newCLI(t)
	notTranscript := c.writeFile("bad.jsonl", "{}\n")
	for _, args := range [][]string{
		{"import", "--resume", "--id", "x", notTranscript},
		{"import", notTranscript},
		{"import", "--id", "x", "--strict", c.writeFile("strict.jsonl", "not json\n")},
	} {
		r := c.fails(exitFailure, args...)
		if _, err := os.Stat(c.store); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("reprise %s (%s) left a store: %v", strings.Join(args, " "), r.stderr, err)
		}
		if entries, _ := os.ReadDir(filepath.Dir(c.store)); len(entries) != 0 {
			t.Fatalf("reprise %s left files beside the store: %v", strings.Join(args, " "), entries)
		}
	}
	// Nor the directories it made for a store in new ones.
	nested := filepath.Join(c.dir, "made", "for", "it.db")
	c.fails(exitFailure, "--store", nested, "import", notTranscript)
	if _, err := os.Stat(filepath.Join(c.dir, "made")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed import left the directories it made for its store: %v", err)
	}
	c.ok("new", "--id", "other")
	c.fails(exitFailure, "import", "--resume", "--id", "x", notTranscript)
	if got := c.sessionIDs(); got != "other" {
		t.Fatalf("sessions after a failed import: %q", got)
	}
}
