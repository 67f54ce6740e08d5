package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/internal/testkit"
)

// transcriptHookSettings writes a settings file whose SessionStart hook
// answers with the transcript path it was given.
func transcriptHookSettings(t *testing.T, c *cli) string {
	t.Helper()
	path := `sed -n 's/.*"transcript_path":"\([^"]*\)".*/\1/p'`
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{
		"SessionStart": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": path}}}},
	}})
	return c.writeFile("transcript-hook.json", string(b))
}

// startKeepsOwnTranscript starts session s, which holds a message of its
// store's own, in each of two stores, and then checks that the transcript
// each store's hook was given still holds that store's conversation: a
// hook that reads it later must not find the other store's.
func startKeepsOwnTranscript(t *testing.T, c *cli, stores [2]string) {
	t.Helper()
	settings := transcriptHookSettings(t, c)
	var paths [2]string
	for i, store := range stores {
		c.ok("--store", store, "new", "--id", "s", "--cwd", c.dir)
		c.ok("--store", store, "append", "s", "--role", "user", fmt.Sprintf("message of store %d", i))
		out := c.ok("--store", store, "start", "--agent", "ide", "--settings", settings, "--no-default-settings", "--json", "s")
		var r struct{ Context string }
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Context == "" {
			t.Fatalf("start printed %s (%v)", out, err)
		}
		paths[i] = strings.TrimPrefix(strings.TrimSpace(r.Context), "SessionStart hook additional context: ")
	}
	for i, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(data), fmt.Sprintf("message of store %d", i)) {
			t.Errorf("store %d: its hook's transcript %s now holds %s (%v); want its own conversation", i, path, data, err)
		}
	}
}

// Two bbolt stores in one directory keep their transcripts apart.
func TestFileStoresInOneDirectoryKeepTheirTranscriptsApart(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(c.dir, "stores")
	startKeepsOwnTranscript(t, c, [2]string{filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")})
}

// A store named by a relative path gives hooks absolute paths: they run
// in their session's directory, where the relative ones would lead
// elsewhere, and what they write to CLAUDE_ENV_FILE would be lost.
func TestRelativeStoreGivesHooksAbsolutePaths(t *testing.T) {
	c := newBinaryCLI(t)
	project := c.mkdir("project")
	hook := `echo "export FROM_HOOK=1" >> "$CLAUDE_ENV_FILE"; sed -n 's/.*"transcript_path":"\([^"]*\)".*/\1/p'`
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{
		"SessionStart": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": hook}}}},
	}})
	settings := c.writeFile("hooks.json", string(b))
	c.ok("--store", "rel.db", "new", "--id", "s", "--cwd", project)
	c.ok("--store", "rel.db", "append", "s", "--role", "user", "hello")
	var r struct {
		Context, Env string
		EnvFile      string `json:"env_file"`
	}
	c.okJSON(&r, "--store", "rel.db", "start", "--agent", "ide", "--settings", settings, "--no-default-settings", "s")
	path := strings.TrimPrefix(strings.TrimSpace(r.Context), "SessionStart hook additional context: ")
	want := filepath.Join(c.dir, "rel.db.transcripts", "s.jsonl")
	if path != want || !filepath.IsAbs(r.EnvFile) || r.Env != "export FROM_HOOK=1\n" {
		t.Fatalf("hook was given transcript %q (want %q) and env file %q, and wrote %q", path, want, r.EnvFile, r.Env)
	}
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), "hello") {
		t.Fatalf("transcript %s: %s (%v)", path, data, err)
	}
	if entries, _ := os.ReadDir(project); len(entries) != 0 {
		t.Fatalf("files written in the session's directory: %v", entries)
	}
}

// Two PostgreSQL stores keep their transcripts apart, though both keep
// them under the user's cache directory.
func TestPostgresStoresKeepTheirTranscriptsApart(t *testing.T) {
	c := newCLI(t)
	startKeepsOwnTranscript(t, c, [2]string{postgresStore(t), postgresStore(t)})
}

// A store's transcript directory depends on what makes it one store, not
// on how its URL is spelled or who connects.
func TestDatabaseDirName(t *testing.T) {
	t.Setenv("PGHOST", "")
	t.Setenv("PGPORT", "")
	t.Setenv("PGDATABASE", "")
	base := databaseDirName("postgres://alice@db.example:5432/app?search_path=one")
	for url, same := range map[string]bool{
		"postgres://bob:secret@db.example:5432/app?search_path=one&sslmode=disable": true,
		"postgresql://alice@db.example/app?search_path=one":                         true,
		"postgres://alice@db.example:5432/app?search_path=two":                      false,
		"postgres://alice@db.example:5432/other?search_path=one":                    false,
		"postgres://alice@db2.example:5432/app?search_path=one":                     false,
		"postgres://alice@db.example:5433/app?search_path=one":                      false,
	} {
		got := databaseDirName(url)
		if (got == base) != same || !strings.HasPrefix(got, "app-") && !strings.HasPrefix(got, "other-") {
			t.Errorf("%s: %q beside %q, want same=%v", url, got, base, same)
		}
	}
	if got := databaseDirName("postgres://h/../../x%2Fy"); strings.ContainsAny(got, "/.") {
		t.Errorf("a database name made the directory %q", got)
	}
}

// Hooks inherit reprise's environment, unless $REPRISE_HOOK_ENV lists the
// only variables they get; those of the hook protocol are set either way.
func TestHookEnvironmentAllowList(t *testing.T) {
	c := newCLI(t)
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{
		"SessionStart": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "env | grep -E '^(PATH|HOME|CLAUDE_[A-Z_]*|" + storeEnv + ")='"}}}},
	}})
	settings := c.writeFile("env-hook.json", string(b))
	c.ok("new", "--id", "s", "--cwd", c.dir)
	hookSaw := func() string {
		t.Helper()
		out := c.ok("start", "--agent", "ide", "--settings", settings, "--no-default-settings", "--json", "s")
		var r struct{ Context string }
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("start printed %s: %v", out, err)
		}
		return "\n" + r.Context
	}
	if got := hookSaw(); !strings.Contains(got, "\n"+storeEnv+"=") {
		t.Fatalf("by default a hook inherits the whole environment; it saw %s", got)
	}
	t.Setenv(hookEnvEnv, "PATH, HOME")
	got := hookSaw()
	for _, want := range []string{"\nPATH=", "\nHOME=", "\nCLAUDE_PROJECT_DIR=" + c.dir, "\nCLAUDE_ENV_FILE="} {
		if !strings.Contains(got, want) {
			t.Errorf("with %s set the hook lacks %q; it saw %s", hookEnvEnv, want, got)
		}
	}
	if strings.Contains(got, "\n"+storeEnv+"=") {
		t.Errorf("with %s set the hook still inherited %s: %s", hookEnvEnv, storeEnv, got)
	}
}

// An imported session works in the directory the user gives, or the
// importing shell's, never silently in the one its transcript names: a
// transcript naming a directory with hooks of its own does not make them
// run. The transcript's value is kept and shown by sessions.
func TestImportNeverTakesTheTranscriptsCwd(t *testing.T) {
	c := newCLI(t)
	evil := filepath.Join(c.dir, "evil")
	ran := filepath.Join(c.dir, "evil-hook-ran")
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{
		"SessionStart": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "touch " + ran}}}},
	}})
	c.writeFile("evil/.claude/settings.json", string(b))
	line, _ := json.Marshal(map[string]any{"type": "user", "uuid": "u1", "cwd": evil,
		"message": map[string]any{"role": "user", "content": "hi"}})
	file := c.writeFile("planted.jsonl", string(line)+"\n")

	c.ok("import", file, "--id", "s")
	var sessions []sessionJSON
	if err := json.Unmarshal([]byte(c.ok("--json", "sessions")), &sessions); err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 1 || sessions[0].Cwd != c.dir || sessions[0].ImportedCwd != evil {
		t.Fatalf("sessions = %+v, want cwd %s and the transcript's %s kept apart", sessions, c.dir, evil)
	}
	if out := c.ok("sessions"); !strings.Contains(out, c.dir+" (transcript: "+evil+")") {
		t.Fatalf("sessions does not show the transcript's cwd:\n%s", out)
	}
	c.ok("start", "--agent", "ide", "s")
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the hooks of the directory the transcript named ran")
	}

	// Given by the user, the same directory is used: its hooks run.
	c.ok("import", file, "--id", "chosen", "--cwd", evil)
	c.ok("start", "--agent", "ide", "chosen")
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("the hooks of the directory the user chose did not run: %v", err)
	}
}

// export -o writes a target that is not a regular file in place, never
// renames over a symbolic link or another user's file, and makes a new
// file readable by its owner only.
func TestExportTargets(t *testing.T) {
	c := newCLI(t)
	c.ok("new", "--id", "s", "--cwd", c.dir)
	c.ok("append", "s", "--role", "user", "hello")
	want := c.ok("export", "s")

	// A FIFO with a reader gets the transcript and stays a FIFO.
	fifo := filepath.Join(c.dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	c.ok("export", "s", "-o", fifo)
	if got, err := io.ReadAll(reader); err != nil || string(got) != want {
		t.Errorf("the FIFO's reader got %q, %v; want %q", got, err, want)
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("the FIFO was replaced: %v, %v", info.Mode(), err)
	}

	// A link to a device, such as /dev/stdout or /dev/null, is written
	// through and left as it is.
	null := filepath.Join(c.dir, "null")
	if err := os.Symlink(os.DevNull, null); err != nil {
		t.Fatal(err)
	}
	c.ok("export", "s", "-o", null)
	if dest, err := os.Readlink(null); err != nil || dest != os.DevNull {
		t.Errorf("the link to %s was replaced: %q, %v", os.DevNull, dest, err)
	}

	// A link to a regular file is refused, and neither changes.
	mine := c.writeFile("mine.txt", "mine")
	link := filepath.Join(c.dir, "link.jsonl")
	if err := os.Symlink(mine, link); err != nil {
		t.Fatal(err)
	}
	if r := c.fails(exitFailure, "export", "s", "-o", link); !strings.Contains(r.stderr, "symbolic link") {
		t.Errorf("export to a link said %s", r.stderr)
	}
	if dest, err := os.Readlink(link); err != nil || dest != mine {
		t.Errorf("the link was replaced: %q, %v", dest, err)
	}
	if data, _ := os.ReadFile(mine); string(data) != "mine" {
		t.Errorf("written through the link: %q", data)
	}

	// A new file is the owner's only, whatever the umask.
	fresh := filepath.Join(c.dir, "new.jsonl")
	c.ok("export", "s", "-o", fresh)
	if info, err := os.Stat(fresh); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("new file: %v, %v; want mode 0600", info.Mode(), err)
	}

	// Another user's file is not replaced (only root can make one here).
	if os.Getuid() != 0 {
		return
	}
	theirs := c.writeFile("theirs.jsonl", "theirs")
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if r := c.fails(exitFailure, "export", "s", "-o", theirs); !strings.Contains(r.stderr, "another user") {
		t.Errorf("export over another user's file said %s", r.stderr)
	}
	if data, _ := os.ReadFile(theirs); string(data) != "theirs" {
		t.Errorf("another user's file was replaced: %q", data)
	}
}

// A project's settings file that is a FIFO or a link to /dev/zero (a
// cloned repository can carry either) neither hangs nor kills a restore: it
// is skipped with a warning naming it.
func TestHostileProjectSettings(t *testing.T) {
	for name, plant := range map[string]func(path string) error{
		"FIFO":              func(path string) error { return syscall.Mkfifo(path, 0o600) },
		"link to /dev/zero": func(path string) error { return os.Symlink("/dev/zero", path) },
	} {
		t.Run(name, func(t *testing.T) {
			c := newCLI(t)
			project := c.mkdir("project/.claude")
			settings := filepath.Join(project, "settings.json")
			if err := plant(settings); err != nil {
				t.Fatal(err)
			}
			c.ok("new", "--id", "s", "--cwd", filepath.Dir(project))
			done := make(chan result, 1)
			go func() { done <- c.run("start", "--agent", "ide", "s") }()
			select {
			case r := <-done:
				if r.code != exitOK || !strings.Contains(r.stderr, settings) {
					t.Fatalf("start: exit %d, stderr %s; want success and a warning naming %s", r.code, r.stderr, settings)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("start is still reading the settings file")
			}
		})
	}
}

// A transcript directory another user could have made first, in a shared
// directory, with a link planted in it: start warns, writes nothing there
// and nothing through the link.
func TestPlantedTranscriptDirectory(t *testing.T) {
	c := newCLI(t)
	store := filepath.Join(c.dir, "shared", "r.db")
	dir := c.mkdir("shared/r.db.transcripts")
	mine := c.writeFile("mine.txt", "mine")
	if err := os.Symlink(mine, filepath.Join(dir, "s.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	c.ok("--store", store, "new", "--id", "s", "--cwd", c.dir)
	c.ok("--store", store, "append", "s", "--role", "user", "secret conversation")
	r := c.run("--store", store, "--json", "start", "--agent", "ide", "--settings", transcriptHookSettings(t, c), "--no-default-settings", "s")
	if r.code != exitOK || !strings.Contains(r.stderr, dir+" may be written by other users") {
		t.Fatalf("start: exit %d, stderr %s; want a warning naming %s", r.code, r.stderr, dir)
	}
	// The hook is not pointed at what another user may have planted.
	var rec struct{ Context string }
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil || strings.Contains(rec.Context, dir) {
		t.Fatalf("the hook was given a transcript in the refused directory: %s (%v)", r.stdout, err)
	}
	if data, _ := os.ReadFile(mine); string(data) != "mine" {
		t.Fatalf("written through the planted link: %q", data)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("files written into the planted directory: %v", entries)
	}
}

// TestStoreTakenOverInASharedDirectory plays the takeover of a store kept
// in a shared directory: another user forges a log whose session's
// project holds their hook, and plants it at the user's store path, as a
// link or (as root, who can make a file of theirs) as their own file.
// reprise start must neither open it nor run the hook.
func TestStoreTakenOverInASharedDirectory(t *testing.T) {
	c := newCLI(t)
	shared := c.mkdir("shared")
	if err := os.Chmod(shared, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(c.dir, "hook-ran")
	c.writeFile("evil/.claude/settings.json", testkit.Settings(t, []string{"touch " + ran}, nil))
	forged := filepath.Join(shared, "forged.db")
	c.ok("--store", forged, "new", "--id", "s", "--cwd", filepath.Join(c.dir, "evil"))

	plants := map[string]func(store string){
		"a link": func(store string) {
			if err := os.Symlink(forged, store); err != nil {
				t.Fatal(err)
			}
		},
	}
	if os.Getuid() == 0 {
		plants["another user's file"] = func(store string) {
			if err := os.Rename(forged, store); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(store, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, name := range []string{"a link", "another user's file"} {
		plant, ok := plants[name]
		if !ok {
			continue
		}
		store := filepath.Join(shared, "reprise-"+strings.ReplaceAll(name, " ", "-")+".db")
		plant(store)
		r := c.fails(exitFailure, "--store", store, "start", "--agent", "ide", "s")
		if !strings.Contains(r.stderr, store) || !strings.Contains(r.stderr, "not a private file") {
			t.Errorf("start on %s at the store path said %s; want it refused, naming the path", name, r.stderr)
		}
		if _, err := os.Stat(ran); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("the forged store's hook ran (%s at the store path)", name)
		}
		c.fails(exitFailure, "--store", store, "sessions")
	}
}
