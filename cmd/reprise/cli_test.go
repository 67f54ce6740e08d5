package main

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/reprise-dev/reprise/internal/proctest"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/spf13/cobra"
)

func TestHelpEverywhere(t *testing.T) {
	c := newCLI(t)
	help := c.ok("--help")
	root := newRootCmd()
	n := 0
	for _, cmd := range root.Commands() {
		name := cmd.Name()
		if name == "help" || name == "completion" {
			continue
		}
		n++
		if !strings.Contains(help, "  "+name+" ") {
			t.Errorf("reprise --help does not list %s:\n%s", name, help)
		}
		if cmd.GroupID == "" && name != "version" {
			t.Errorf("%s is in no group of reprise --help", name)
		}
		out := c.ok(name, "--help")
		if !strings.Contains(out, "Examples:\n  reprise "+name) || !strings.Contains(out, "--store") || !strings.Contains(out, "--json") {
			t.Errorf("reprise %s --help lacks examples or global flags:\n%s", name, out)
		}
	}
	if n < 28 {
		t.Errorf("the root command has %d commands, want at least 28", n)
	}
	// The groups come in this order, each under its heading.
	last := -1
	for _, g := range root.Groups() {
		at := strings.Index(help, "\n"+g.Title+"\n")
		if at <= last {
			t.Errorf("reprise --help: group %q missing or out of order:\n%s", g.Title, help)
		}
		last = at
	}
	if len(root.Groups()) != 5 {
		t.Errorf("reprise --help has %d groups, want 5", len(root.Groups()))
	}
}

// docs/cli.md describes every command of the root command, and the help
// names the same groups.
func TestDocsDescribeEveryCommand(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	root := newRootCmd()
	for _, cmd := range root.Commands() {
		if cmd.Name() == "help" {
			continue
		}
		if !strings.Contains(string(doc), "\n### "+cmd.Name()+"\n") {
			t.Errorf("docs/cli.md has no section for %s", cmd.Name())
		}
	}
	for _, g := range root.Groups() {
		if !strings.Contains(string(doc), g.ID+" (") {
			t.Errorf("docs/cli.md does not name the group %s", g.ID)
		}
	}
}

func TestBadUsageExitsWith2(t *testing.T) {
	c := newCLI(t)
	c.session("s1", "hello")
	for _, args := range [][]string{
		{"sesions"},
		{"sessions", "extra"},
		{"sessions", "--no-such-flag"},
		{"new", "--id", "../escape"},
		{"new", "--id", strings.Repeat("x", 129)},
		{"new", "--id", "tab\there"},
		{"append", "s1", "--role", "system", "hi"},
		{"append", "s1", "hi"},
		{"append", "s1", "--role", "user"},
		{"append", "s1", "--role", "user", "a", "b"},
		{"start", "s1"},
		{"start", "--agent", "a/b", "s1"},
		{"resume", "--agent", "ide"},
		{"log"},
		{"log", "s1", "--agent", "ide"},
		{"replay", "s1", "--format", "xml"},
		{"replay", "s1", "--format", "text", "--json"},
		{"import"},
		{"import", "a.jsonl", "--id", "a..b"},
		{"export"},
		{"hooks", "--event", "Notfication"},
		{"hooks", "--source", ""},
		{"hooks", "--session", ""},
		{"completion", "tcsh"},
	} {
		r := c.fails(exitUsage, args...)
		if !wantsJSON(args) && !strings.Contains(r.stderr, "--help' for usage") {
			t.Errorf("reprise %s: no usage hint: %s", strings.Join(args, " "), r.stderr)
		}
	}
	if r := c.run("sesions"); !strings.Contains(r.stderr, "did you mean sessions?") {
		t.Errorf("no suggestion: %s", r.stderr)
	}
}

func TestStoreLocation(t *testing.T) {
	c := newCLI(t)
	// REPRISE_STORE, set by newCLI.
	c.ok("new", "--id", "in-env-store")
	if _, err := os.Stat(c.store); err != nil {
		t.Fatalf("store not at $REPRISE_STORE: %v", err)
	}
	// --store wins over REPRISE_STORE.
	other := filepath.Join(c.dir, "other.db")
	c.ok("--store", other, "new", "--id", "in-other")
	if out := c.ok("--store", other, "sessions"); !strings.Contains(out, "in-other") || strings.Contains(out, "in-env-store") {
		t.Fatalf("--store ignored:\n%s", out)
	}
	// Without either: $XDG_STATE_HOME/reprise/reprise.db, else
	// ~/.local/state/reprise/reprise.db.
	os.Unsetenv(storeEnv) // restored when the test ends
	c.ok("new", "--id", "in-xdg")
	if _, err := os.Stat(filepath.Join(os.Getenv("XDG_STATE_HOME"), "reprise", "reprise.db")); err != nil {
		t.Fatalf("store not under XDG_STATE_HOME: %v", err)
	}
	os.Unsetenv("XDG_STATE_HOME")
	c.ok("new", "--id", "in-home")
	if _, err := os.Stat(filepath.Join(c.home, ".local", "state", "reprise", "reprise.db")); err != nil {
		t.Fatalf("store not under ~/.local/state: %v", err)
	}
	// A read-only command does not create a store.
	none := filepath.Join(c.dir, "none.db")
	r := c.fails(exitFailure, "--store", none, "log", "s")
	if !strings.Contains(r.stderr, "no store at") {
		t.Fatalf("stderr = %s", r.stderr)
	}
	c.ok("--store", none, "sessions")
	if _, err := os.Stat(none); err == nil {
		t.Fatal("sessions created the store")
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n$`)

func TestNewAndAppend(t *testing.T) {
	c := newCLI(t)
	id := c.ok("new")
	if !uuidRE.MatchString(id) {
		t.Fatalf("new printed %q, want a UUID", id)
	}
	id = strings.TrimSpace(id)
	var created struct{ Session, Cwd string }
	// A working directory must exist: hooks run in it.
	if r := c.fails(exitFailure, "new", "--id", "named", "--cwd", "sub/dir"); !strings.Contains(r.stderr, "working directory does not exist") {
		t.Fatalf("new --cwd missing: %s", r.stderr)
	}
	if err := os.MkdirAll(filepath.Join(c.dir, "sub", "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	c.okJSON(&created, "new", "--id", "named", "--cwd", "sub/dir")
	if created.Session != "named" || created.Cwd != filepath.Join(c.dir, "sub", "dir") {
		t.Fatalf("new --json = %+v", created)
	}
	c.fails(exitFailure, "new", "--id", "named")

	first := strings.TrimSpace(c.ok("append", id, "--role", "user", "hello"))
	r := c.runIn(strings.NewReader("from stdin\n"), "append", id, "--role", "assistant", "-")
	if r.code != exitOK {
		t.Fatalf("append -: %d %s", r.code, r.stderr)
	}
	var meta messageJSON
	c.okJSON(&meta, "append", id, "--role", "user", "--meta", "context")
	if !meta.Meta || meta.Role != "user" || meta.UUID == "" || meta.ParentUUID != strings.TrimSpace(r.stdout) {
		t.Fatalf("append --json = %+v", meta)
	}
	c.fails(exitFailure, "append", "missing", "--role", "user", "hi")

	var conv conversationJSON
	c.okJSON(&conv, "replay", id)
	var texts []string
	for _, m := range conv.Messages {
		texts = append(texts, m.Role+":"+m.Content[0].(map[string]any)["text"].(string))
	}
	if got := strings.Join(texts, " | "); got != "user:hello | assistant:from stdin | user:context" || conv.Messages[0].UUID != first {
		t.Fatalf("conversation = %s", got)
	}
	if conv.Cwd != c.dir {
		t.Fatalf("cwd = %q, want the process's %q", conv.Cwd, c.dir)
	}
}

func TestSessions(t *testing.T) {
	c := newCLI(t)
	c.session("one", "a", "b")
	c.session("two")
	c.ok("start", "--agent", "ide", "--no-default-settings", "two")
	out := c.ok("sessions")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.HasPrefix(lines[1], "one ") || !strings.HasPrefix(lines[2], "two ") {
		t.Fatalf("sessions:\n%s", out)
	}
	var list []sessionJSON
	c.okJSON(&list, "sessions")
	if len(list) != 2 || list[0].ID != "one" || list[0].Messages != 2 || list[0].Cwd != c.dir ||
		list[0].LastRestored != "" || list[1].LastRestored == "" || !validTime(list[1].Created) {
		t.Fatalf("sessions --json = %+v", list)
	}
}

// A bare reprise prints the help, as gh does, and exits with 0.
func TestBareRepriseprintsTheHelp(t *testing.T) {
	c := newBinaryCLI(t)
	r := c.run()
	if r.code != exitOK || r.stderr != "" || r.stdout != c.ok("--help") || !strings.Contains(r.stdout, "\nLifecycle (sessions, restores, turns):\n") {
		t.Fatalf("reprise: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

func TestVersion(t *testing.T) {
	c := newCLI(t)
	out := c.ok("version")
	if !strings.HasPrefix(out, "reprise ") || !strings.HasSuffix(out, " ("+runtime.Version()+")\n") || c.ok("--version") != out {
		t.Fatalf("version: %q, --version: %q", out, c.ok("--version"))
	}
	var v, flag versionJSON
	c.okJSON(&v, "version")
	c.okJSON(&flag, "--version")
	if v != flag || v.Version == "" || v.Go != runtime.Version() || v.String()+"\n" != out {
		t.Fatalf("version --json = %+v, --version --json = %+v, text %q", v, flag, out)
	}
	c.fails(exitUsage, "version", "extra")
}

// The binary reports what its build info says: the module version, and
// the VCS revision when the build recorded one.
func TestBinaryVersionIsTheBuildInfo(t *testing.T) {
	c := newBinaryCLI(t)
	info, err := buildinfo.ReadFile(c.binary)
	if err != nil {
		t.Fatal(err)
	}
	var v versionJSON
	c.okJSON(&v, "version")
	want := versionOf(info)
	if v != want {
		t.Fatalf("version --json = %+v, build info says %+v", v, want)
	}
}

func TestVersionString(t *testing.T) {
	for _, tc := range []struct {
		v    versionJSON
		want string
	}{
		{versionJSON{Version: "v1.2.0", Go: "go1.26.0"}, "reprise v1.2.0 (go1.26.0)"},
		{versionJSON{Version: "(devel)", Go: "go1.26.0"}, "reprise (devel) (go1.26.0)"},
		{versionJSON{Version: "(devel)", Revision: "2b68489c1f2e47d3884c96b11e4feb0c3aaaaaaa", Time: "2026-11-30T19:20:04Z", Modified: true, Go: "go1.26.0"},
			"reprise (devel) revision 2b68489c1f2e of 2026-11-30T19:20:04Z, modified (go1.26.0)"},
		{versionJSON{Version: "v1.3.0-0.20261130192004-2b68489c1f2e", Revision: "2b68489c1f2e47d3884c96b11e4feb0c3aaaaaaa", Go: "go1.26.0"},
			"reprise v1.3.0-0.20261130192004-2b68489c1f2e revision 2b68489c1f2e (go1.26.0)"},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.v, got, tc.want)
		}
	}
}

// On a fresh machine, with no store anywhere, sessions lists none and
// creates nothing.
func TestSessionsOnAFreshMachine(t *testing.T) {
	c := newBinaryCLI(t)
	os.Unsetenv(storeEnv) // restored when the test ends
	if out := c.ok("sessions"); out != "ID  CWD  MESSAGES  CREATED  LAST RESTORED  TITLE\n" {
		t.Fatalf("sessions: %q", out)
	}
	if out := c.ok("sessions", "--json"); out != "[]\n" {
		t.Fatalf("sessions --json: %q", out)
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("XDG_STATE_HOME"), "reprise")); err == nil {
		t.Fatal("sessions created the store's directory")
	}
}

// With --json, wherever it is on the line, every error is one JSON object
// on stderr with the exit code, and stdout stays empty.
func TestJSONErrors(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("s")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--json", "sesions"}, exitUsage, `unknown command "sesions"; did you mean sessions?`},
		{[]string{"sessions", "--json", "--no-such-flag"}, exitUsage, "unknown flag: --no-such-flag"},
		{[]string{"--json", "log"}, exitUsage, "missing SESSION, --agent or --follow"},
		{[]string{"new", "--id", "-x", "--json"}, exitUsage, `--id: invalid id "-x": it must start with a letter or digit`},
		{[]string{"--json=true", "end", "--agent", "ide", "--reason", "bogus"}, exitUsage, "--reason must be one of "},
		{[]string{"--json", "log", "missing"}, exitFailure, "session not found: missing"},
		{[]string{"--json", "resume", "--agent", "ide", "s"}, exitFailure, "agent ide has no current session; give it one with reprise start --agent ide"},
	} {
		r := c.fails(tc.code, tc.args...)
		var e struct {
			Error string `json:"error"`
			Code  int    `json:"code"`
		}
		if err := json.Unmarshal([]byte(r.stderr), &e); err != nil || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" ||
			e.Code != tc.code || !strings.Contains(e.Error, tc.msg) {
			t.Errorf("reprise %s: stdout %q, stderr %q, want %q", strings.Join(tc.args, " "), r.stdout, r.stderr, tc.msg)
		}
	}
	// Without --json, or with --json=false, errors stay text.
	if r := c.fails(exitFailure, "--json=false", "log", "missing"); !strings.HasPrefix(r.stderr, "reprise: ") {
		t.Fatalf("--json=false: %s", r.stderr)
	}
}

// jsonRuns gives, in order, for each command that lists --json, a command
// line that succeeds on the store TestEveryCommandListingJSONPrintsJSON
// makes. A command that lists --json and is missing here fails the test.
var jsonRuns = []struct {
	name string
	args []string // nil for a command too slow to run here
}{
	{"reprise", []string{"--version"}},
	{"version", []string{"version"}},
	{"new", []string{"new", "--id", "n"}},
	{"append", []string{"append", "a", "--role", "user", "hi"}},
	{"start", []string{"start", "--agent", "ide", "--no-default-settings", "a"}},
	{"resume", []string{"resume", "--agent", "ide", "--no-default-settings", "b"}},
	{"prompt", []string{"prompt", "--agent", "ide", "--no-default-settings", "go on"}},
	{"stop", []string{"stop", "--agent", "ide", "--no-default-settings"}},
	{"tool", []string{"tool", "--agent", "ide", "--no-default-settings", "--tool-use-id", "t1", "--name", "Read", "--permission", "allow", "--add-tool-use"}},
	{"tool-result", []string{"tool-result", "--agent", "ide", "--no-default-settings", "--tool-use-id", "t1", "--output", `"ok"`}},
	{"fire", []string{"fire", "Setup", "--agent", "ide", "--no-default-settings", "--id", "f1", "--input", `{"trigger":"init"}`}},
	{"compact", []string{"compact", "--agent", "ide", "--no-default-settings", "summary"}},
	{"fork", []string{"fork", "--agent", "ide", "--no-default-settings", "a"}},
	{"clear", []string{"clear", "--agent", "ide", "--no-default-settings"}},
	{"end", []string{"end", "--agent", "ide", "--reason", "complete", "--no-default-settings"}},
	{"finish", []string{"finish", "--agent", "ide", "--no-default-settings"}},
	{"sessions", []string{"sessions"}},
	{"agents", []string{"agents"}},
	{"log", []string{"log", "a"}},
	{"replay", []string{"replay", "a"}},
	{"audit", []string{"audit"}},
	{"import", []string{"import", "-", "--id", "imported"}},
	{"export", []string{"export", "a", "-o", "a.jsonl"}},
	{"hooks", []string{"hooks", "--no-default-settings"}},
	{"demo", []string{"demo", "--store", "demo.db"}},
	{"backup", []string{"backup", "backup.db"}},
	{"copy", []string{"copy", "--to", "copy.db"}},
	{"rm", []string{"rm", "b"}},
	{"vacuum", []string{"vacuum"}},
	{"bench", nil}, // too slow here; TestBenchQuickJSON runs it with --json
	{"serve", nil}, // runs until interrupted; TestServeJSON runs it with --json
}

// Every command that lists --json prints JSON with it (one value, or for
// log one a line); the others do not list it.
func TestEveryCommandListingJSONPrintsJSON(t *testing.T) {
	c := newCLI(t)
	c.session("a", "hello")
	c.session("b")
	root := newRootCmd()
	listing := map[string]bool{}
	for _, cmd := range append([]*cobra.Command{root}, root.Commands()...) {
		listing[cmd.Name()] = cmd.Flags().Lookup("json") != nil
	}
	for _, run := range jsonRuns {
		if !listing[run.name] {
			t.Errorf("%s does not list --json", run.name)
		}
		delete(listing, run.name)
		if run.args == nil {
			continue
		}
		r := c.runIn(strings.NewReader(`{"type":"user","message":{"role":"user","content":"hi"}}`+"\n"), append(run.args, "--json")...)
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		values := 0
		for {
			var v any
			err := dec.Decode(&v)
			if err == io.EOF {
				break
			}
			if err != nil {
				values = 0
				break
			}
			values++
		}
		if r.code != exitOK || values == 0 {
			t.Errorf("reprise %s --json: exit %d\nstdout: %s\nstderr: %s", strings.Join(run.args, " "), r.code, r.stdout, r.stderr)
		}
	}
	for name, lists := range listing {
		if lists {
			t.Errorf("%s lists --json but jsonRuns has no command line for it", name)
		}
	}
	for _, args := range [][]string{{"completion", "bash"}, {"help"}} {
		c.fails(exitUsage, append(args, "--json")...)
	}
}

func TestDemoJSON(t *testing.T) {
	c := newCLI(t)
	var d demoJSON
	c.okJSON(&d, "demo")
	if d.Store != "" || len(d.Restores) != 4 || d.Restores[0].Source != "startup" || d.Restores[1].Source != "resume" ||
		d.Restores[2].Source != "fork" || d.Restores[3].Source != "clear" || len(d.Events) == 0 ||
		d.Conversation.Session != d.Restores[1].To || len(d.Conversation.Messages) != 4 {
		t.Fatalf("demo --json = %+v", d)
	}
	// The last act: a restore killed after its SessionStart hook ran,
	// finished by the next call without running it again.
	k := d.Crash
	if k.To != d.Restores[1].To || k.From != d.Restores[3].To || !strings.Contains(k.Killed, "killed") || k.HookRuns != 1 ||
		k.Finished.SessionStart == nil || len(k.Finished.SessionStart.Hooks) != 1 || k.Finished.SessionStart.Hooks[0].Status != "interrupted" ||
		k.Left == 0 || k.Left >= d.Events[len(d.Events)-1].Position {
		t.Fatalf("demo --json crash = %+v", k)
	}
}

func TestDemoFitsIn100ColumnsAndSaysWhereItsStoreIs(t *testing.T) {
	c := newCLI(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out := c.ok("demo")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, line := range lines {
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("demo line %d is %d columns wide: %s", i+1, n, line)
		}
	}
	for _, want := range []string{
		"\nlast act: restore ", ", killed after its SessionStart hook ran,\n",
		"\nthe next call on agent demo-host, in a fresh process, finished it:\n",
		"  ContextInjected         session=",
		"\nSessionStart hook project-context: interrupted, as it ran in the killed process\n",
		"\nit ran 1 time(s) for this restore in all, none after the kill\n",
		"\nthe temporary store was removed; reprise demo --keep keeps it, reprise demo --serve shows it\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("demo left %v in TMPDIR", entries)
	}

	out = c.ok("demo", "--keep")
	m := regexp.MustCompile(`\nthe store stays at (\S+)\nsee it in a browser: reprise --store (\S+) serve\n$`).FindStringSubmatch(out)
	if m == nil || !strings.HasPrefix(m[1], tmp) {
		t.Fatalf("demo --keep does not say where its store stays:\n%s", out)
	}
	if audit := c.ok("--store", m[1], "audit"); !strings.HasPrefix(audit, "ok: ") {
		t.Fatalf("audit of the kept store: %s", audit)
	}
}

// The completion scripts come out for each shell, and each is valid in
// its shell where that shell is installed; completing runs through the
// commands' own argument checks.
func TestCompletion(t *testing.T) {
	c := newBinaryCLI(t)
	for shell, mark := range map[string]string{
		"bash": "# bash completion V2 for reprise",
		"zsh":  "#compdef reprise",
		"fish": "complete -c reprise ",
	} {
		script := c.ok("completion", shell)
		if !strings.Contains(script, mark) {
			t.Errorf("completion %s lacks %q", shell, mark)
		}
		path, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("no %s here to check its script", shell)
			continue
		}
		check := exec.Command(path, "-n", c.writeFile("completion."+shell, script))
		if out, err := check.CombinedOutput(); err != nil {
			t.Errorf("%s -n of its completion script: %v\n%s", shell, err, out)
		}
	}
	if out := c.ok("__complete", "resume", "--ag"); !strings.HasPrefix(out, "--agent\t") {
		t.Errorf("completing resume --ag: %q", out)
	}
	if out := c.ok("__complete", "ses"); !strings.HasPrefix(out, "sessions\t") {
		t.Errorf("completing ses: %q", out)
	}
	if r := c.fails(exitUsage, "completion", "tcsh"); !strings.Contains(r.stderr, `unknown command "tcsh"`) {
		t.Errorf("completion tcsh: %s", r.stderr)
	}
	if out := c.ok("completion", "--help"); !strings.Contains(out, "~/.local/share/bash-completion/completions/reprise") ||
		!strings.Contains(out, "needs the bash-completion package (_get_comp_words_by_ref)") {
		t.Errorf("completion --help does not say how to install:\n%s", out)
	}
}

// internalName matches the name of one of reprise's packages used as an
// error prefix: the user should never see one.
var internalName = regexp.MustCompile(`\b(` + strings.Join(internalPrefixes, "|") + `): `)

// Bad input gets the exit code docs/cli.md gives it and a message that
// says what is wrong, in the user's words, and what would work.
func TestBadInputsSayWhatWouldWork(t *testing.T) {
	c := newCLI(t)
	c.session("s1", "hello")
	c.session("s2")
	c.ok("start", "--agent", "on", "--no-default-settings", "s1")
	long := strings.Repeat("x", 2000)
	bad := c.writeFile("bad.json", `{"hooks": {"SessionStart": [`)
	notJSON := c.writeFile("notes.txt", "just notes\n")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"end", "--agent", "on", "--reason", "bogus"}, exitUsage, `--reason must be one of complete, error, abort, timeout, user_exit, logout, prompt_input_exit, other, not "bogus"`},
		{[]string{"end", "--agent", "on"}, exitUsage, "missing --reason"},
		{[]string{"clear"}, exitUsage, "missing --agent"},
		{[]string{"finish"}, exitUsage, "missing --agent"},
		{[]string{"copy"}, exitUsage, "--to is required"},
		{[]string{"append", "s1", "hi"}, exitUsage, "missing --role: user or assistant"},
		{[]string{"append", "s1", "--role", "system", "hi"}, exitUsage, `--role must be user or assistant, not "system"`},
		{[]string{"new", "--id", long}, exitUsage, `--id: invalid id "` + strings.Repeat("x", 32) + `…" (2000 bytes): longer than 128 bytes`},
		{[]string{"log", "-s"}, exitUsage, "unknown shorthand flag: 's' in -s"},
		{[]string{"--lock-timeout", "5", "sessions"}, exitUsage, "--lock-timeout 5: give a duration with a unit, such as 5s"},
		{[]string{"log", "s/1"}, exitUsage, `session: invalid id "s/1": '/' at byte 1 is not allowed; use only letters, digits, '-', '_', '.' and ':'`},
		{[]string{"start", "--agent", ".ide", "s1"}, exitUsage, `--agent: invalid id ".ide": it must start with a letter or digit`},
		{[]string{"start", "--agent", "ide", "--settings", "missing.json", "s1"}, exitUsage, "--settings missing.json: no such file"},
		{[]string{"start", "--agent", "ide", "--settings", bad, "s1"}, exitUsage, "--settings: invalid configuration: " + bad + ":1:"},
		{[]string{"resume", "--agent", "on", "--settings", notJSON, "s2"}, exitUsage, "--settings: invalid configuration: " + notJSON + ":1:"},
		{[]string{"new", "--agent", "ide", "--plugin-dir", "no-plugin"}, exitUsage, "--plugin-dir no-plugin: no such directory"},
		{[]string{"prompt", "--agent", "on", "--plugin-dir", bad, "hi"}, exitUsage, "--plugin-dir " + bad + ": not a directory"},
		{[]string{"prompt", "--agent", "on", "--settings", c.dir, "hi"}, exitUsage, "--settings " + c.dir + ": is a directory"},
		{[]string{"compact", "--agent", "on", "--trigger", "sometimes", "sum"}, exitUsage, `--trigger must be manual or auto, not "sometimes"`},
		{[]string{"hooks", "--event", "Notfication"}, exitUsage, `--event must name one of Claude Code's 33 hook events (SessionStart, PreToolUse, Stop, Notification, ...: docs/hooks.md lists them), not "Notfication"`},
		{[]string{"replay", "s1", "--format", "xml"}, exitUsage, `--format must be text, json or claude, not "xml"`},
		{[]string{"bench", "--only", "nothing"}, exitUsage, `no bench named "nothing"`},
		{[]string{"audit", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"completion", "tcsh"}, exitUsage, `unknown command "tcsh" for "reprise completion"`},
		{[]string{"replay", "s1", "--format", long}, exitUsage, `--format must be text, json or claude, not "` + strings.Repeat("x", 31) + "… (2002 bytes)"},
		{[]string{"fork", "--agent", "on", "--no-default-settings", "s1", "--at", long}, exitFailure, "message not found: " + strings.Repeat("x", 32) + "… (2000 bytes) in s1"},
		{[]string{"log", "missing"}, exitFailure, "session not found: missing"},
		{[]string{"start", "--agent", "ide", "missing"}, exitFailure, "session not found: missing"},
		{[]string{"clear", "--agent", "nobody"}, exitFailure, "agent nobody has no current session; give it one with reprise start --agent nobody SESSION"},
		{[]string{"import", "nofile.jsonl"}, exitFailure, "open nofile.jsonl: no such file or directory"},
		{[]string{"import", notJSON}, exitFailure, notJSON + `: not a Claude Code transcript: none of its 1 line(s) is a transcript record (a JSON object with a "type")`},
		{[]string{"--store", notJSON, "log", "s1"}, exitFailure, notJSON},
		{[]string{"--store", filepath.Join(c.dir, long), "log", "s1"}, exitFailure, fmt.Sprintf(" (%d bytes): open: lstat ", len(filepath.Join(c.dir, long)))},
		{[]string{"--store", filepath.Join(c.dir, long), "log", "s1"}, exitFailure, " bytes): file name too long"},
	} {
		r := c.fails(tc.code, tc.args...)
		msg := strings.TrimPrefix(strings.SplitN(r.stderr, "\n", 2)[0], "reprise: ")
		if !strings.Contains(msg, tc.msg) || internalName.MatchString(msg) || len(msg) > 400 {
			t.Errorf("reprise %.80s: %q\nwant it to say %q", strings.Join(tc.args, " "), msg, tc.msg)
		}
	}
	// Nothing was recorded for the agent a usage error stopped.
	c.fails(exitFailure, "log", "--agent", "ide")
	// Several errors make one line.
	if r := c.fails(exitFailure, "rm", "gone1", "gone2"); r.stderr != "reprise: session not found: gone1; session not found: gone2\n" {
		t.Errorf("rm of two missing sessions: %q; want both errors on one line", r.stderr)
	}
}

// The code of a JSON error is the exit code, for a command a signal
// stopped too.
func TestBinaryJSONErrorOfAnInterruptedCommand(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("a")
	pidFile := filepath.Join(c.dir, "hook.pid")
	settings := c.writeFile("hooks.json", testkit.Settings(t, []string{"echo $$ > " + pidFile + "; exec sleep 30"}, nil))
	cmd, stderr, exited := c.startBinary("--json", "start", "--agent", "ide", "--settings", settings, "--no-default-settings", "a")
	hook := proctest.WaitPid(t, pidFile, stderr.String)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("start did not exit within 10 s of SIGTERM")
	}
	proctest.AssertGone(t, map[string]int{"SessionStart hook": hook})
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	var e struct {
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	if code := cmd.ProcessState.ExitCode(); code != 143 || json.Unmarshal([]byte(lines[len(lines)-1]), &e) != nil ||
		e.Code != 143 || !strings.HasPrefix(e.Error, "interrupted: the startup restore of agent ide to session a stopped at a step boundary") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

// TestATextFileIsNotAStore checks that a file that is no store, given as
// --store, is said to be no reprise store rather than a damaged one, by
// the commands that read and those that write.
func TestATextFileIsNotAStore(t *testing.T) {
	c := newCLI(t)
	notes := c.writeFile("notes.txt", "remember the milk\n")
	for _, args := range [][]string{{"sessions"}, {"new"}, {"audit"}} {
		r := c.fails(exitFailure, append([]string{"--store", notes}, args...)...)
		if !strings.Contains(r.stderr, notes+" is not a reprise store (not a bbolt file") || strings.Contains(r.stderr, "damaged") {
			t.Errorf("%s on a text file: %s", args[0], r.stderr)
		}
	}
}
