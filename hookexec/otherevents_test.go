package hookexec_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/hookexec"
)

// LoadOtherHooks lists what LoadSettings does not load: the hooks of
// events that are none of Claude Code's, whatever their type.
func TestLoadOtherHooksListsTheHooksNotRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	data := `{"hooks": {
  "SessionStart": [{"hooks": [{"type": "command", "command": "echo start"}]}],
  "SubagentStop": [{"matcher": "*", "hooks": [{"type": "http", "url": "http://127.0.0.1:9/x", "timeout": 1.5}]}],
  "Notification": [{"hooks": [{"type": "command", "command": "notify-send done"}, {"type": "http", "url": "http://127.0.0.1:9/n"}]}],
  "Sneezed": [{"hooks": [{"type": "command", "command": "echo bless"}, {"type": "http", "url": "http://127.0.0.1:9/s", "timeout": 1.5}]}],
  "Broken": {"not": "a list"}
}}`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	hooks, bad, err := hookexec.LoadOtherHooks(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []hookexec.OtherHook{
		{Event: "Sneezed", Type: "command", Text: "echo bless", Source: path},
		{Event: "Sneezed", Type: "http", Text: "http://127.0.0.1:9/s", Timeout: 1500 * time.Millisecond, Source: path},
	}
	if !reflect.DeepEqual(hooks, want) {
		t.Errorf("hooks = %+v\nwant %+v", hooks, want)
	}
	if len(bad) != 1 || !errors.Is(bad[0], hookexec.ErrBadConfig) {
		t.Errorf("bad = %v, want one ErrBadConfig for Broken", bad)
	}

	// The same reading as LoadSettings: a missing file, a file that is no
	// JSON object.
	if _, _, err := hookexec.LoadOtherHooks(filepath.Join(t.TempDir(), "none.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
	if err := os.WriteFile(path, []byte(`[1]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := hookexec.LoadOtherHooks(path); !errors.Is(err, hookexec.ErrBadConfig) {
		t.Errorf("a JSON array: err = %v", err)
	}
}

func TestLoadOtherPluginHooksReplacesThePluginRoot(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "hooks"), 0o700); err != nil {
		t.Fatal(err)
	}
	data := `{"hooks": {"Sneezed": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/bless"}]}]}}`
	if err := os.WriteFile(filepath.Join(dir, "hooks", "hooks.json"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	hooks, bad, err := hookexec.LoadOtherPluginHooks(dir)
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	want := []hookexec.OtherHook{{Event: "Sneezed", Type: "command", Text: dir + "/bless", Source: "plugin:" + dir, PluginRoot: dir}}
	if !reflect.DeepEqual(hooks, want) {
		t.Errorf("hooks = %+v\nwant %+v", hooks, want)
	}
}
