package reprise_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/internal/testkit"
)

func importFile(t *testing.T, e *reprise.Engine, path string, opts reprise.ImportOptions) reprise.ImportReport {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := e.Import(context.Background(), f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func export(t *testing.T, e *reprise.Engine, id string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := e.Export(context.Background(), id, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Every record and block type of a Claude Code transcript survives import
// and export byte for byte, in order; user and assistant records become
// messages with their blocks.
func TestImportExportKeepsEveryRecord(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	original, err := os.ReadFile("testdata/transcripts/every-record.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	rep := importFile(t, e, "testdata/transcripts/every-record.jsonl", reprise.ImportOptions{ID: "imported"})
	if rep.Messages != 6 || rep.Records != 6 || len(rep.Skipped) != 0 || rep.Bytes != int64(len(original)) {
		t.Fatalf("report = %+v", rep)
	}
	if got := export(t, e, "imported"); !bytes.Equal(got, original) {
		t.Fatalf("export differs from the imported file:\n%s", got)
	}
	msgs, err := e.Conversation(ctx, "imported")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, m := range msgs {
		for _, b := range m.Content {
			types = append(types, b.Type)
		}
	}
	want := "text thinking text tool_use tool_result image text text text"
	if strings.Join(types, " ") != want || !msgs[4].IsMeta || msgs[1].ParentUUID != "u1" {
		t.Fatalf("blocks = %v (meta %v)", types, msgs[4].IsMeta)
	}
	// Messages added after the import chain onto it and export as new lines.
	if _, err := e.Append(ctx, "imported", reprise.Text("user", "thanks")); err != nil {
		t.Fatal(err)
	}
	once := export(t, e, "imported")
	if !bytes.HasPrefix(once, original) || bytes.Count(once, []byte("\n")) != 13 {
		t.Fatalf("export after append:\n%s", once)
	}
	// Export, import, export is byte-stable.
	e2, _ := testkit.NewEngine(t, reprise.Options{})
	if _, err := e2.Import(ctx, bytes.NewReader(once), reprise.ImportOptions{ID: "again"}); err != nil {
		t.Fatal(err)
	}
	if twice := export(t, e2, "again"); !bytes.Equal(once, twice) {
		t.Fatalf("export, import, export changed bytes:\n%s\nvs\n%s", once, twice)
	}
}

// The transcript the Engine keeps for hooks is the export.
func TestTranscriptFileIsTheExport(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	importFile(t, e, "testdata/transcripts/every-record.jsonl", reprise.ImportOptions{ID: "imported"})
	testkit.Session(t, e, "other", "")
	a := testkit.Agent(t, e, "ide")
	a.Start(ctx, "other")
	var c calls
	recordingHooks(t, e.Hooks(), &c, "from the hook")
	if _, err := a.Restore(ctx, "imported"); err != nil {
		t.Fatal(err)
	}
	kept, err := os.ReadFile(e.TranscriptPath("imported"))
	if err != nil {
		t.Fatal(err)
	}
	exported := export(t, e, "imported")
	// The file hooks read is brought up to date as soon as the reminder is
	// injected: it is the export, byte for byte, reminder included.
	if !bytes.Equal(exported, kept) || !bytes.Contains(kept, []byte("from the hook")) {
		t.Fatalf("transcript file:\n%s\nexport:\n%s", kept, exported)
	}
}

func TestImportReportsMalformedLines(t *testing.T) {
	input := "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"},\"uuid\":\"u1\"}\nnot json at all\n[1,2]\n\n{\"type\":\"summary\"}\n"
	e, _ := testkit.NewEngine(t, reprise.Options{})
	rep, err := e.Import(context.Background(), strings.NewReader(input), reprise.ImportOptions{ID: "loose"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Messages != 1 || rep.Records != 1 || len(rep.Skipped) != 2 || rep.Skipped[0].Line != 2 || rep.Skipped[1].Line != 3 {
		t.Fatalf("report = %+v", rep)
	}
	_, err = e.Import(context.Background(), strings.NewReader(input), reprise.ImportOptions{ID: "strict", Strict: true})
	if !errors.Is(err, reprise.ErrBadTranscript) || !strings.Contains(err.Error(), "line 2") && !strings.Contains(err.Error(), " 2:") {
		t.Fatalf("strict import: err = %v", err)
	}
}

// TestImportSkipsALineOverTheLimit checks that a line longer than
// MaxTranscriptLine, in the middle of a transcript after a batch was
// written, is read past and reported as skipped, so that the import
// finishes, and that the lines on either side of it are kept; a strict
// import refuses it by its number.
func TestImportSkipsALineOverTheLimit(t *testing.T) {
	record := func(i int) string {
		return fmt.Sprintf(`{"type":"user","uuid":"u%d","message":{"role":"user","content":"line %d"}}`+"\n", i, i)
	}
	var before strings.Builder
	for i := range 1500 { // more than a batch, so that the long line comes after an append
		before.WriteString(record(i))
	}
	long := io.MultiReader(strings.NewReader(`{"type":"user","pad":"`), &repeated{b: 'x', n: reprise.MaxTranscriptLine})
	input := func() io.Reader {
		return io.MultiReader(strings.NewReader(before.String()), long, strings.NewReader("\"}\n"+record(2000)))
	}
	e, _ := testkit.NewEngine(t, reprise.Options{})
	rep, err := e.Import(context.Background(), input(), reprise.ImportOptions{ID: "long"})
	if err != nil {
		t.Fatal(err)
	}
	want := []reprise.SkippedLine{{Line: 1501, Err: fmt.Sprintf("longer than %d bytes", reprise.MaxTranscriptLine)}}
	if rep.Messages != 1501 || !reflect.DeepEqual(rep.Skipped, want) {
		t.Fatalf("report: %d messages, skipped %+v; want 1501 and %+v", rep.Messages, rep.Skipped, want)
	}
	sessions, err := e.Sessions(context.Background())
	if err != nil || len(sessions) != 1 || sessions[0].Importing {
		t.Fatalf("sessions after the import: %+v, %v; want it finished", sessions, err)
	}
	long = io.MultiReader(strings.NewReader(`{"type":"user","pad":"`), &repeated{b: 'x', n: reprise.MaxTranscriptLine})
	_, err = e.Import(context.Background(), input(), reprise.ImportOptions{ID: "strict", Strict: true})
	if !errors.Is(err, reprise.ErrBadTranscript) || !strings.Contains(err.Error(), " 1501: longer than") {
		t.Fatalf("strict import: %v; want line 1501 refused", err)
	}
}

// repeated reads n copies of b, without holding them.
type repeated struct {
	b byte
	n int
}

func (r *repeated) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.n)
	for i := range n {
		p[i] = r.b
	}
	r.n -= n
	return n, nil
}

func TestImportOfInputWithoutATranscriptRecordRecordsNothing(t *testing.T) {
	e, _ := testkit.NewEngine(t, reprise.Options{})
	for name, input := range map[string]string{
		"empty":   "",
		"blank":   "\n  \n",
		"readme":  "# A README\n\nNot a transcript.\n",
		"binary":  "\x00\x01\xff\xfe\n\x7fELF",
		"arrays":  "[1]\n\"text\"\n",
		"object":  "{}\n",
		"untyped": "{\"a\": 1}\n{\"type\": 2}\n{\"type\": \"\"}\n",
		"batch":   strings.Repeat("{}\n", 1001) + "{\"type\":\"summary\"}\n",
	} {
		_, err := e.Import(context.Background(), strings.NewReader(input), reprise.ImportOptions{ID: name, Cwd: "/w"})
		if !errors.Is(err, reprise.ErrNotTranscript) {
			t.Errorf("%s: err = %v", name, err)
		}
		if head, err := e.Store().Head(context.Background(), "session/"+name); err != nil || head != 0 {
			t.Errorf("%s: the session has %d events (%v)", name, head, err)
		}
	}
	// One record among bad lines is a transcript.
	rep, err := e.Import(context.Background(), strings.NewReader("junk\n{\"type\":\"summary\"}\n"), reprise.ImportOptions{ID: "one"})
	if err != nil || rep.Records != 1 || len(rep.Skipped) != 1 {
		t.Fatalf("report %+v, err %v", rep, err)
	}
}

// Text that is not valid UTF-8 keeps its bytes: export gives the imported
// line back as it was, the message holds the bytes, and a fork, whose
// lines are written anew, writes them again instead of U+FFFD.
func TestImportKeepsInvalidUTF8(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{AllowMissingCwd: true})
	lines := "{\"type\":\"user\",\"uuid\":\"u1\",\"parentUuid\":null,\"cwd\":\"/src\",\"message\":{\"role\":\"user\",\"content\":\"bad \xff\xfe \\\"q\\\" \\u00e9\"}}\n" +
		"{\"type\":\"assistant\",\"uuid\":\"u2\",\"parentUuid\":\"u1\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"cut \xe2\x82 <&>\"}]}}\n" +
		"{\"type\":\"summary\",\"summary\":\"s \xc3\"}\n"
	if _, err := e.Import(ctx, strings.NewReader(lines), reprise.ImportOptions{ID: "bytes"}); err != nil {
		t.Fatal(err)
	}
	if got := export(t, e, "bytes"); string(got) != lines {
		t.Fatalf("export = %q\nwant     %q", got, lines)
	}
	msgs, err := e.Conversation(ctx, "bytes")
	if err != nil {
		t.Fatal(err)
	}
	wantText := []string{"bad \xff\xfe \"q\" é", "cut \xe2\x82 <&>"}
	for i, m := range msgs {
		if m.Content[0].Text != wantText[i] {
			t.Errorf("message %d text = %q, want %q", i, m.Content[0].Text, wantText[i])
		}
	}
	r, err := testkit.Agent(t, e, "ide").Fork(ctx, "bytes", "")
	if err != nil {
		t.Fatal(err)
	}
	forked := string(export(t, e, r.To))
	for _, want := range []string{`"content":"bad ` + "\xff\xfe" + ` \"q\" é"`, `"text":"cut ` + "\xe2\x82" + ` <&>"`} {
		if !strings.Contains(forked, want) {
			t.Errorf("the fork's transcript lacks %q:\n%q", want, forked)
		}
	}
}

// failingReader gives the first n bytes of data, then fails, as a source
// cut off part way would.
type failingReader struct {
	data []byte
	n    int
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, errors.New("source cut off")
	}
	k := copy(p, r.data[:min(r.n, len(r.data))])
	r.data, r.n = r.data[k:], r.n-k
	return k, nil
}

// An import that stops part way leaves a session marked unfinished, which
// the audit reports and a new import refuses; Resume from the same
// transcript appends the rest, and a different transcript is refused.
func TestImportUnfinishedAndResumed(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{AllowMissingCwd: true})
	var full strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&full, `{"type":"user","uuid":"m%d","message":{"role":"user","content":"message %d"}}`+"\n", i, i)
		if i%100 == 0 {
			full.WriteString(`{"type":"summary","summary":"so far"}` + "\n" + "not json\n")
		}
	}
	data := []byte(full.String())
	_, err := e.Import(ctx, &failingReader{data: data, n: len(data) / 2}, reprise.ImportOptions{ID: "cut"})
	if err == nil || !strings.Contains(err.Error(), "source cut off") {
		t.Fatalf("import of a cut source: %v", err)
	}
	list, err := e.Sessions(ctx)
	if err != nil || len(list) != 1 || !list[0].Importing || list[0].Messages == 0 || list[0].Messages >= 3000 {
		t.Fatalf("sessions after the cut = %+v, %v", list, err)
	}
	rep, err := reprise.Audit(ctx, e.Store())
	if err != nil || len(rep.Violations) != 1 || rep.Violations[0].Kind != reprise.ViolationUnfinishedImport {
		t.Fatalf("audit after the cut: %+v, %v", rep, err)
	}
	if _, err := e.Import(ctx, strings.NewReader(full.String()), reprise.ImportOptions{ID: "cut"}); !errors.Is(err, reprise.ErrImportUnfinished) {
		t.Fatalf("import again: %v, want ErrImportUnfinished", err)
	}
	// Nothing else may add to it meanwhile: what it added would keep the
	// import from being resumed.
	msg := reprise.Message{Role: "user", Content: []reprise.Block{{Type: "text", Text: "in between"}}}
	if _, err := e.Append(ctx, "cut", msg); !errors.Is(err, reprise.ErrImportUnfinished) {
		t.Fatalf("append to the unfinished import: %v, want ErrImportUnfinished", err)
	}
	if _, err := e.Buffer(ctx, "cut", msg); !errors.Is(err, reprise.ErrImportUnfinished) {
		t.Fatalf("buffer into the unfinished import: %v, want ErrImportUnfinished", err)
	}
	testkit.Session(t, e, "other", "", "hello")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "cut"); !errors.Is(err, reprise.ErrImportUnfinished) {
		t.Fatalf("start of the unfinished import: %v, want ErrImportUnfinished", err)
	}
	if _, err := a.Start(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Restore(ctx, "cut"); !errors.Is(err, reprise.ErrImportUnfinished) {
		t.Fatalf("restore of the unfinished import: %v, want ErrImportUnfinished", err)
	}
	other := strings.Replace(full.String(), `"message 5"`, `"message five"`, 1)
	if _, err := e.Import(ctx, strings.NewReader(other), reprise.ImportOptions{ID: "cut", Resume: true}); !errors.Is(err, reprise.ErrBadTranscript) {
		t.Fatalf("resume from another transcript: %v, want ErrBadTranscript", err)
	}
	got, err := e.Import(ctx, strings.NewReader(full.String()), reprise.ImportOptions{ID: "cut", Resume: true})
	if err != nil || got.Messages != 3000 || got.Records != 30 || got.SkippedTotal != 30 {
		t.Fatalf("resume = %+v, %v; want 3000 messages, 30 records, 30 skipped lines", got, err)
	}
	var kept strings.Builder
	for _, line := range strings.SplitAfter(full.String(), "\n") {
		if line != "not json\n" {
			kept.WriteString(line)
		}
	}
	if out := export(t, e, "cut"); string(out) != kept.String() {
		t.Fatalf("the resumed session exports %d bytes, want %d", len(out), kept.Len())
	}
	if rep, err := reprise.Audit(ctx, e.Store()); err != nil || len(rep.Violations) != 0 {
		t.Fatalf("audit after the resume: %+v, %v", rep, err)
	}
	if _, err := e.Import(ctx, strings.NewReader(full.String()), reprise.ImportOptions{ID: "cut", Resume: true}); !errors.Is(err, reprise.ErrSessionExists) {
		t.Fatalf("resume of a finished import: %v, want ErrSessionExists", err)
	}
}
